"""Apply a userdata's write_files with cloud-init's own modules, as its
init stage (write_files) and final stage (write_files_deferred) do, so the
Go tests can compare kube-aws-node's result with cloud-init's.

usage: python3 cloudinit_write_files.py USERDATA
"""
import sys

from cloudinit import util
from cloudinit.config import cc_write_files

cfg = util.load_yaml(open(sys.argv[1]).read())
files = cfg.get("write_files") or []
for deferred in (False, True):
    chosen = [f for f in files if util.get_cfg_option_bool(f, "defer", False) == deferred]
    cc_write_files.write_files("write_files", chosen, "root:root")
