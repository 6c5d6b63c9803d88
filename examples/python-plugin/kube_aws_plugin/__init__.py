"""A small SDK for writing kube-aws plugins in Python.

kube-aws starts a plugin with hashicorp/go-plugin. A plugin in any language
must (1) check the magic cookie in its environment, (2) pick a protocol
version kube-aws offers in PLUGIN_PROTOCOL_VERSIONS, (3) serve gRPC with the
services of plugins/proto/v1/plugin.proto plus the standard gRPC health
service reporting "plugin" as SERVING, and (4) print one line to stdout:
``1|<protocol version>|tcp|<host:port>|grpc``. This module does all four; an
author subclasses Plugin and overrides the stage methods it implements.
"""

import json
import os
import signal
import sys
import threading
from concurrent import futures

# The generated modules import each other by their bare names.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # noqa: E402

import plugin_pb2 as pb  # noqa: E402
import plugin_pb2_grpc as pb_grpc  # noqa: E402

MAGIC_COOKIE_KEY = "KUBE_AWS_PLUGIN"
MAGIC_COOKIE_VALUE = "b3c1f5de-kube-aws-plugin"  # must equal plugins/protocol.MagicCookieValue
PROTOCOL_VERSION = 1
STAGES = ("initialise", "render", "deploy", "validate")
__all__ = ["Plugin", "Request", "serve", "fatal", "warning", "pb"]


def fatal(message, path="", hint="", code=""):
    """A fatal diagnostic: kube-aws stops after the current stage. code
    "needs-confirmation" says the same command run with --yes gets past it."""
    return pb.Diagnostic(severity="fatal", message=message, path=path, hint=hint, code=code)


def warning(message, path="", hint="", code=""):
    """A warning diagnostic: printed, and the run goes on."""
    return pb.Diagnostic(severity="warning", message=message, path=path, hint=hint, code=code)


class Request:
    """One stage call: the input every plugin receives, decoded."""

    def __init__(self, name, raw, emit):
        self.raw = raw
        self.stage = raw.stage
        self.plugin = name
        self.config = json.loads(raw.config_json) if raw.config_json else {}
        self._emit = emit

    def values(self):
        """This plugin's cluster-level values from cluster.yaml, as a dict."""
        pv = self.raw.values.get(self.plugin)
        if pv is None or not pv.values_json:
            return {}
        return json.loads(pv.values_json)

    def log(self, message, level="info"):
        self._emit(pb.Event(kind="log", level=level, message=message))

    def progress(self, current, total, message=""):
        self._emit(pb.Event(kind="progress", current=current, total=total, message=message))


class Plugin:
    """Subclass and override the stage methods you implement. Each returns a
    plugin_pb2.StageResult (or None for an empty result)."""

    name = ""
    version = "0.0.0"
    description = ""
    values_schema = None
    capabilities = ()

    def implemented_stages(self):
        return [s for s in STAGES if type(self).__dict__.get(s) is not None]


class _Servicer(pb_grpc.PluginServicer):
    def __init__(self, plugin):
        self.plugin = plugin

    def GetInfo(self, request, context):
        schema = b""
        if self.plugin.values_schema is not None:
            schema = json.dumps(self.plugin.values_schema).encode()
        return pb.PluginInfo(
            name=self.plugin.name,
            version=self.plugin.version,
            description=self.plugin.description,
            protocol_versions=[PROTOCOL_VERSION],
            stages=self.plugin.implemented_stages(),
            values_schema_json=schema,
            capabilities=list(self.plugin.capabilities),
        )

    def NotifyRegistrationStatus(self, request, context):
        if not request.accepted:
            sys.stderr.write("kube-aws rejected plugin %s: %s\n" % (self.plugin.name, request.reason))
        return pb.Ack()

    def _stage(self, stage, request, context):
        events = []
        req = Request(self.plugin.name, request, events.append)
        method = getattr(self.plugin, stage, None)
        try:
            result = method(req) if method else None
        except Exception as exc:  # reported to kube-aws as the stage's error
            context.abort(grpc.StatusCode.INTERNAL, "plugin %s failed in %s: %s: %s"
                          % (self.plugin.name, stage, type(exc).__name__, exc))
            return
        for ev in events:
            yield pb.StageEvent(event=ev)
        yield pb.StageEvent(result=result or pb.StageResult())

    def Initialise(self, request, context):
        yield from self._stage("initialise", request, context)

    def Render(self, request, context):
        yield from self._stage("render", request, context)

    def Deploy(self, request, context):
        yield from self._stage("deploy", request, context)

    def Validate(self, request, context):
        yield from self._stage("validate", request, context)


def _exit_when_parent_dies(parent):
    # kube-aws may be killed with SIGKILL; a plugin must not outlive it.
    def watch():
        while True:
            if os.getppid() != parent:
                os._exit(1)
            threading.Event().wait(0.5)
    threading.Thread(target=watch, daemon=True).start()


def serve(plugin):
    """Serve the plugin until kube-aws stops it."""
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This is a kube-aws plugin: it is started by kube-aws, not run by hand.\n")
        sys.exit(1)
    offered = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(PROTOCOL_VERSION)).split(",")
    if str(PROTOCOL_VERSION) not in offered:
        sys.stderr.write("kube-aws offers protocol versions %s; this plugin speaks %d\n"
                         % (",".join(offered), PROTOCOL_VERSION))
        sys.exit(1)
    _exit_when_parent_dies(os.getppid())

    limit = 256 * 1024 * 1024
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=[
        ("grpc.max_receive_message_length", limit),
        ("grpc.max_send_message_length", limit),
    ])
    pb_grpc.add_PluginServicer_to_server(_Servicer(plugin), server)
    checker = health.HealthServicer()
    checker.set("plugin", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write("1|%d|tcp|127.0.0.1:%d|grpc\n" % (PROTOCOL_VERSION, port))
    sys.stdout.flush()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(0)
