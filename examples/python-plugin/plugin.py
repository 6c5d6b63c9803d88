"""python-example: a kube-aws plugin written in Python that takes part in
every stage. It is the proof that plugin authors are not tied to Go: it uses
only grpcio and the generated code of plugins/proto/v1/plugin.proto.

Enable it in cluster.yaml:

    plugins:
      python-example:
        enabled: true
        values:
          greeting: hello from python
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kube_aws_plugin import Plugin, pb, serve, warning  # noqa: E402


class PythonExample(Plugin):
    name = "python-example"
    version = "0.1.0"
    description = "Example plugin in Python: a systemd unit, an API server flag, a rendered file"
    values_schema = {
        "type": "object",
        "properties": {"greeting": {"type": "string", "minLength": 1}},
        "additionalProperties": False,
    }

    def initialise(self, req):
        greeting = req.values().get("greeting", "hello")
        req.log("initialising with greeting %r" % greeting)
        unit = pb.Unit(
            target=pb.Target(role="controller"),
            name="python-example.service",
            content="[Unit]\nDescription=python-example greeting\n\n[Service]\nType=oneshot\n"
                    "ExecStart=/bin/echo %s\n\n[Install]\nWantedBy=multi-user.target\n" % greeting,
            enable=True,
        )
        constructs = pb.ConstructSet(
            units=[unit],
            api_server=pb.APIServer(flags=[pb.Flag(name="enable-admission-plugins", value="NodeRestriction")]),
        )
        return pb.StageResult(values_json=json.dumps({"greeting": greeting}).encode(), constructs=constructs)

    def render(self, req):
        units = [u.name for u in req.raw.constructs.units]
        body = json.dumps({"plugin": self.name, "units": sorted(units)}, indent=2, sort_keys=True) + "\n"
        return pb.StageResult(files=[pb.File(path="extra/python-example.json", content=body.encode(), mode="0644")])

    def deploy(self, req):
        stacks = [s.name for s in req.raw.deploy.stacks]
        req.log("deploy sees %d stack(s)" % len(stacks))
        return pb.StageResult(deploy=pb.DeployResult(outputs={"PythonExample": "deployed"}))

    def validate(self, req):
        # Validate sees the deploy result: a real check would call the API
        # server; this one reports a deploy that produced no API endpoint.
        outputs = dict(req.raw.deploy.outputs) if req.raw.HasField("deploy") else {}
        if not outputs.get("APIEndpoint"):
            return pb.StageResult(diagnostics=[warning(
                "the deploy result has no APIEndpoint output, so python-example cannot greet the API server",
                path="plugins.python-example",
                hint="run kube-aws up (or kube-aws stage deploy) before kube-aws validate")])
        return pb.StageResult()

if __name__ == "__main__":
    serve(PythonExample())
