"""kube-aws's moto: moto 5.2.1 in server mode, changed where kube-aws's rolls
and pod IAM roles depend on AWS behaving in a way moto does not.

    python test/awstest/motoaws.py -H 127.0.0.1 -p PORT   (moto_server's arguments)

`make demo` and the benchmarks start moto this way (scripts/lib/moto.sh), and
test/awstest starts every test's moto with this file (embedded) on stdin. Each patch below says
what AWS does and what moto 5.2.1 did instead. They replace moto functions by
name, so a moto upgrade must be checked against them: the file refuses to
start with any other moto version, or when a function it replaces is gone
from moto's source (read at start; each module is patched when moto first
imports it, so a moto that serves only S3 starts as fast as moto_server).

What it plays (docs/e2e-cluster.md, "What of AWS the harness plays"):
- CloudFormation updates an AWS::AutoScaling::AutoScalingGroup in place (same
  name; launch template and version, sizes, load balancers, target groups,
  tags, lifecycle hooks), after the resources whose values it reads (a launch
  template's new LatestVersionNumber); moto deleted the group and made a new
  one under a new name, and did not update a group whose own template text
  was unchanged.
- An instance keeps the launch template version it was launched from
  (DescribeAutoScalingGroups, DescribeAutoScalingInstances, and EC2's
  aws:ec2launchtemplate:* tags); moto reported the template's default.
- Termination lifecycle hooks: an instance the group terminates leaves its
  load balancers and waits in Terminating:Wait, still running, until
  CompleteLifecycleAction or its hook's heartbeat timeout; moto terminated
  at once and did not implement CompleteLifecycleAction or
  RecordLifecycleActionHeartbeat.
- CloudFormation creates an AWS::IAM::OIDCProvider: IAM's provider (Ref and
  GetAtt Arn its ARN; a new Url replaces it, its client ids, thumbprints
  and tags are updated in place; deleted with its stack); moto skipped the
  type and dropped every Ref to it (a trust policy's Federated principal).
- STS AssumeRoleWithWebIdentity verifies the token as AWS does: its iss an
  OIDC provider of the role's account, its signature by the key of its kid
  in the issuer's key set (the discovery document and the JWKS it names,
  read as publicly readable objects of moto's own S3: no internet here),
  its time and audience, then the role's trust policy (Federated by that
  provider, StringEquals/StringLike on <url>:sub and <url>:aud); and it
  answers the token's subject, provider and audience. moto accepted any
  token for any role.
"""

import ast
import importlib.abc
import importlib.machinery
import os
import re
import sys
import threading
import time
import uuid
import weakref

MOTO_VERSION = "5.2.1"
NAME = "test/awstest/motoaws.py"

TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
GROUP_TYPE = "AWS::AutoScaling::AutoScalingGroup"
# AWS ends a lifecycle action after 48 hours or 100 heartbeat timeouts,
# whichever comes first, heartbeats or not.
GLOBAL_TIMEOUT = 48 * 3600
# Heartbeat timeouts count on the monotonic clock: a host whose wall clock
# is stepped forward (a fresh machine's first time sync) would otherwise
# end every waiting action at once, with its default result.
_clock = time.monotonic

# What the patches replace (or add, or wrap), by module and class. Each
# module is patched when moto first imports it: the Auto Scaling models pull
# in EC2's, seconds of start-up that a test of S3 alone need not pay.
REPLACED = {
    "moto.autoscaling.models": {
        "FakeAutoScalingGroup": [
            "create_from_cloudformation_json",
            "update_from_cloudformation_json",
            "replace_autoscaling_group_instances",
            "set_desired_capacity",
        ],
        "InstanceState": ["launch_template"],
        "AutoScalingBackend": ["terminate_instance", "delete_auto_scaling_group", "update_attached_target_groups"],
    },
    "moto.autoscaling.responses": {"AutoScalingResponse": []},
    "moto.cloudformation.parsing": {"ResourceMap": ["build_resource_diff"]},
    "moto.moto_server.werkzeug_app": {"DomainDispatcherApplication": ["__call__"]},
    # The CloudFormation type AWS::IAM::OIDCProvider is moto's provider
    # model, made a CloudFormation model, through the backend's calls.
    "moto.iam.models": {
        "OpenIDConnectProvider": [],
        "IAMBackend": ["create_open_id_connect_provider", "delete_open_id_connect_provider", "get_role_by_arn"],
    },
    "moto.sts.responses": {"TokenResponse": ["assume_role_with_web_identity"]},
}
# Actions moto 5.2.1 lacks and this file adds.
ADDED = {"AutoScalingResponse": ["complete_lifecycle_action", "record_lifecycle_action_heartbeat"]}
# CloudFormation resource types moto 5.2.1 lacks (it skipped them with a
# warning, and a Ref to one was dropped from the template) and this file adds,
# with the module that would implement them.
ADDED_TYPES = {"AWS::IAM::OIDCProvider": "moto.iam.models"}


def _fail(msg):
    """Stops moto, from any thread (a module may be patched while a request
    is answered)."""
    sys.stderr.write("motoaws: %s\n" % msg)
    sys.stderr.flush()
    os._exit(2)


def _check_moto():
    """At start, without importing the modules: the moto version the patches
    were written for, and every class and function they replace present
    (and none they add), in moto's source."""
    try:
        import moto
    except ImportError as e:
        _fail("moto is not installed in %s (%s): run `make venv`" % (sys.executable, e))
    if moto.__version__ != MOTO_VERSION:
        _fail(
            "moto %s is installed, these patches are for moto %s (requirements-dev.txt): "
            "check every patch in %s against the new moto before changing the pin"
            % (moto.__version__, MOTO_VERSION, NAME)
        )
    root = os.path.dirname(os.path.dirname(moto.__file__))
    for module, classes in REPLACED.items():
        path = os.path.join(root, *module.split(".")) + ".py"
        try:
            with open(path) as f:
                tree = ast.parse(f.read(), path)
        except OSError as e:
            _fail("moto %s has no module %s (%s): the patches of it no longer apply" % (moto.__version__, module, e))
        found = {n.name: {m.name for m in n.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
                 for n in tree.body if isinstance(n, ast.ClassDef)}
        for cls, names in classes.items():
            if cls not in found:
                _fail("moto %s has no class %s in %s: the patches of it no longer apply" % (moto.__version__, cls, module))
            for name in names:
                if name not in found[cls]:
                    _fail("moto %s has no %s.%s: the patch of it in %s no longer applies" % (moto.__version__, cls, name, NAME))
            for name in ADDED.get(cls, []):
                if name in found[cls]:
                    _fail("moto %s implements %s.%s now: drop this file's version of it" % (moto.__version__, cls, name))
    for cfn_type, module in ADDED_TYPES.items():
        path = os.path.join(root, *module.split(".")) + ".py"
        with open(path) as f:
            if '"%s"' % cfn_type in f.read():
                _fail("moto %s implements the CloudFormation type %s now (%s): drop this file's version of it" % (moto.__version__, cfn_type, module))


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Runs patch(module) right after moto executes one of the modules it
    patches, before anything uses it."""

    def __init__(self, patches):
        self.patches = patches

    def find_spec(self, name, path, target=None):
        patch = self.patches.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def _original(owner, name):
    """The moto function a patch replaces, kept to call or fall back to."""
    fn = owner.__dict__.get(name)
    if fn is None:
        _fail("moto %s has no %s.%s: the patch of it in %s no longer applies" % (MOTO_VERSION, owner.__name__, name, NAME))
    return fn


# moto's modules and names, set as each module is patched.
asm = cfp = iam = None
ValidationError = EmptyResult = LoadBalancerNotFoundError = ELBClientError = ActionResult = _NotAuthorized = None
_moto = {}

# One lock for everything here that changes a group's instances: moto's
# server answers requests on several threads.
_lock = threading.RLock()
# The Auto Scaling backends that have had an instance wait on a hook (a
# reset backend drops its groups, and with them its waits).
_waiting_backends = weakref.WeakSet()


# --- CloudFormation: a group is updated in place ---------------------------


def _value_refs(node):
    """The resources (or parameters) a template fragment reads: Ref,
    Fn::GetAtt and Fn::Sub's ${Name} and ${Name.Attribute}."""
    out = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "Ref" and isinstance(v, str):
                out.add(v)
            elif k == "Fn::GetAtt":
                out.add(v[0] if isinstance(v, list) else str(v).split(".")[0])
            elif k == "Fn::Sub":
                text = v[0] if isinstance(v, list) else v
                if isinstance(text, str):
                    out.update(m.split(".")[0] for m in re.findall(r"\$\{([^!}][^}]*)\}", text))
                if isinstance(v, list):
                    out.update(_value_refs(v[1:]))
            else:
                out.update(_value_refs(v))
    elif isinstance(node, list):
        for v in node:
            out.update(_value_refs(v))
    return out


def build_resource_diff(self, other_template, parameters=None):
    """AWS updates a resource when a value it reads changed, not only its own
    text: a group whose LaunchTemplate.Version is the GetAtt of a launch
    template that got a new version is updated to that version. moto compared
    each resource's text only, so the group kept launching the old version.
    Only groups are added (moto replaces most other types on update, where
    AWS would not); and every modified resource is updated after those it
    reads, as AWS orders them (moto went in template order: a group before
    its launch template read the old LatestVersionNumber)."""
    if parameters is None:
        # A change set's listing (ChangeSet.diff) passes its parameters
        # this way: moto's build_change_set_actions takes none.
        parameters = getattr(self, "_kube_aws_parameters", None)
    diff = _moto["resource_diff"](self, other_template, parameters)
    new = other_template["Resources"]
    reads = {name: _value_refs(res) for name, res in new.items()}
    modified = set(diff["Modify"])
    # A resource whose Fn::Sub names a parameter that changed is updated, as
    # on AWS: moto looked for Ref only, so a launch template whose user data
    # is the Fn::Sub of a changed parameter kept its version.
    if parameters:
        changed = {p for p in parameters if self.input_parameters.get(p) != parameters[p]}
        for name, res in new.items():
            if name in self._resource_json_map and name not in modified and reads[name] & changed:
                diff["Modify"].append(name)
                modified.add(name)
    grew = True
    while grew:
        grew = False
        for name, res in new.items():
            if name in modified or name not in self._resource_json_map or res.get("Type") != GROUP_TYPE:
                continue
            if reads[name] & modified:
                diff["Modify"].append(name)
                modified.add(name)
                grew = True
    after = {}
    for name in diff["Modify"]:
        deps = set(reads.get(name, ()))
        depends_on = new.get(name, {}).get("DependsOn", [])
        deps.update([depends_on] if isinstance(depends_on, str) else depends_on)
        after[name] = deps & modified
    ordered, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        for dep in sorted(after.get(name, ())):
            visit(dep)
        ordered.append(name)

    for name in diff["Modify"]:
        visit(name)
    diff["Modify"] = ordered
    return diff


def _int(v):
    return None if v is None else int(v)


def _put_hook_specs(backend, group, props):
    """LifecycleHookSpecificationList: the group's hooks as CloudFormation
    sets them (moto ignored the property). On an update, the hooks the
    template's previous list named and the new one does not are deleted; a
    hook put through the API is the template's business only if it names it."""
    specs = props.get("LifecycleHookSpecificationList") or []
    names = set()
    for s in specs:
        names.add(s["LifecycleHookName"])
        backend.create_lifecycle_hook(
            name=s["LifecycleHookName"],
            as_name=group.name,
            transition=s.get("LifecycleTransition"),
            timeout=_int(s.get("HeartbeatTimeout")),
            result=s.get("DefaultResult"),
        )
        # The hook's metadata, which moto's model leaves out; its
        # DescribeLifecycleHooks answer takes the attribute by name.
        for h in backend.describe_lifecycle_hooks(group.name, [s["LifecycleHookName"]]):
            h.notification_metadata = s.get("NotificationMetadata")
    for name in getattr(group, "template_hooks", set()) - names:
        backend.delete_lifecycle_hook(group.name, name)
    group.template_hooks = names


def _set_balancers(backend, group, lb_names, tg_arns):
    """The group's load balancers and target groups as the template names
    them; the group's instances leave those it no longer names (the ones it
    names get them when the group's sizes are applied)."""
    ids = [s.instance.id for s in group.instance_states]
    for name in set(group.load_balancer_names) - set(lb_names):
        _deregister_classic(backend, name, ids)
    for arn in set(group.target_group_arns) - set(tg_arns):
        _deregister_targets(backend, arn, ids)
    group.load_balancer_names = list(lb_names)
    group.target_group_arns = list(tg_arns)


@classmethod
def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    group = _moto["create_group"](cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    backend = asm.autoscaling_backends[account_id][region_name]
    _put_hook_specs(backend, group, cloudformation_json["Properties"])
    return group


@classmethod
def update_from_cloudformation_json(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name):
    """AWS changes a group in place: same name, same instances; a new launch
    template version is used by the instances launched from now on. moto
    deleted the group (terminating its instances) and created a new one. A
    changed AutoScalingGroupName replaces the group on AWS too."""
    props = cloudformation_json["Properties"]
    group = original_resource
    if props.get("AutoScalingGroupName", group.name) != group.name:
        return _moto["update_group"](cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name)
    backend = asm.autoscaling_backends[account_id][region_name]
    with _lock:
        _put_hook_specs(backend, group, props)
        group.tags = props.get("Tags", [])
        group.termination_policies = props.get("TerminationPolicies") or ["Default"]
        _set_balancers(backend, group, props.get("LoadBalancerNames", []), props.get("TargetGroupARNs", []))
        backend.update_auto_scaling_group(
            name=group.name,
            availability_zones=props.get("AvailabilityZones", []),
            desired_capacity=_int(props.get("DesiredCapacity")),
            max_size=_int(props.get("MaxSize")),
            min_size=_int(props.get("MinSize")),
            launch_config_name=props.get("LaunchConfigurationName"),
            launch_template=props.get("LaunchTemplate", {}),
            vpc_zone_identifier=",".join(props.get("VPCZoneIdentifier", [])) or None,
            health_check_period=_int(props.get("HealthCheckGracePeriod")),
            health_check_type=props.get("HealthCheckType"),
            new_instances_protected_from_scale_in=props.get("NewInstancesProtectedFromScaleIn"),
            mixed_instances_policy=props.get("MixedInstancesPolicy") or None,
        )
    return group


# --- An instance keeps the launch template version it was launched from ----


def replace_autoscaling_group_instances(self, count_needed, propagated_tags):
    """Launches count_needed instances from the version the group names now,
    and records that version on each. moto launched with the template's
    default version (its tags, volumes and key, and the EC2 tag
    aws:ec2launchtemplate:version) and reported the default for every
    instance of the group."""
    propagated_tags[asm.ASG_NAME_TAG] = self.name
    propagated_tags.update(self.instance_tags)
    subnet_id = self.vpc_zone_identifier.split(",")[0] if self.vpc_zone_identifier else None
    associate_public_ip = self.launch_config.associate_public_ip_address if self.launch_config else None
    launch_template, launched_from = None, None
    if self.ec2_launch_template:
        version = self.ec2_launch_template.get_version(self.launch_template_version)
        launch_template = {"LaunchTemplateId": self.ec2_launch_template.id, "Version": str(version.number)}
        # AWS reports the version as the group named it when it launched
        # the instance ("3", or "$Latest"); EC2's tag has the number.
        launched_from = {
            "LaunchTemplateId": self.ec2_launch_template.id,
            "LaunchTemplateName": self.ec2_launch_template.name,
            "Version": str(self.launch_template_version),
        }
    reservation = self.autoscaling_backend.ec2_backend.run_instances(
        self.image_id,
        count_needed,
        self.user_data,
        self.security_groups,
        instance_type=self.instance_type,
        tags={"instance": propagated_tags},
        placement=asm.random.choice(self.availability_zones),
        launch_config=self.launch_config,
        launch_template=launch_template,
        is_instance_type_default=False,
        associate_public_ip=associate_public_ip,
        subnet_id=subnet_id,
    )
    for instance in reservation.instances:
        instance.autoscaling_group = self
        state = asm.InstanceState(instance, protected_from_scale_in=self.new_instances_protected_from_scale_in)
        state.launched_from = launched_from
        state.launched_version = int(launch_template["Version"]) if launch_template else 0
        self.instance_states.append(state)


@property
def instance_launch_template(self):
    launched_from = getattr(self, "launched_from", None)
    if launched_from is not None:
        return dict(launched_from)
    return _moto["instance_lt"].fget(self)


# --- Termination lifecycle hooks --------------------------------------------


def _deregister_classic(backend, lb_name, ids):
    try:
        # AWS has one registration per instance; moto keeps the API's and
        # Auto Scaling's apart.
        backend.elb_backend.deregister_instances(lb_name, ids, from_autoscaling=True)
        backend.elb_backend.deregister_instances(lb_name, ids, from_autoscaling=False)
    except LoadBalancerNotFoundError:
        pass  # deleted before the group, as a stack's deletion may


def _deregister_targets(backend, arn, ids):
    tg = backend.elbv2_backend.target_groups.get(arn)
    if tg is None:
        return
    registered = [{"Id": i} for i in ids if i in tg.targets]
    if registered:
        try:
            tg.deregister(registered)
        except ELBClientError:
            pass


def _leave_balancers(backend, group, state):
    """AWS deregisters an instance from its group's load balancers and
    target groups as it enters Terminating, before any hook waits."""
    for name in group.load_balancer_names:
        _deregister_classic(backend, name, [state.instance.id])
    for arn in group.target_group_arns:
        _deregister_targets(backend, arn, [state.instance.id])


def _termination_hooks(backend, group):
    return [h for h in backend.describe_lifecycle_hooks(group.name) if h.lifecycle_transition == TERMINATING]


def _begin_termination(backend, group, state, hooks=True):
    """The group terminates state's instance: without a termination hook it
    goes at once (as moto did); with one it waits in Terminating:Wait,
    running, until every hook's action is completed or times out."""
    _leave_balancers(backend, group, state)
    waits = _termination_hooks(backend, group) if hooks else []
    if not waits:
        state.lifecycle_state = "Terminating"
        _terminate(backend, group, state)
        return
    now = _clock()
    state.lifecycle_state = "Terminating:Wait"
    state.actions = {}
    for h in waits:
        timeout = int(h.heartbeat_timeout)
        state.actions[h.name] = {
            "token": str(uuid.uuid4()),
            "timeout": timeout,
            "default": h.default_result or "ABANDON",
            "deadline": now + timeout,
            "end": now + min(100 * timeout, GLOBAL_TIMEOUT),
        }
    _waiting_backends.add(backend)


def _terminate(backend, group, state):
    """Terminating:Proceed: EC2 terminates the instance and it leaves the group."""
    state.actions = {}
    group.instance_states = [s for s in group.instance_states if s is not state]
    backend.ec2_backend.terminate_instances([state.instance.id])
    backend.elbv2_backend.notify_terminate_instances([state.instance.id])


def _complete(backend, group, state, hook_name, result):
    """A hook's action ends with result (CONTINUE or ABANDON, given or its
    default). ABANDON ends the wait; CONTINUE ends it once no other
    termination hook waits. Both terminate the instance."""
    state.actions.pop(hook_name, None)
    if result == "ABANDON" or not state.actions:
        state.lifecycle_state = "Terminating:Proceed"
        _terminate(backend, group, state)


def _expire():
    """Applies the default result of every action whose heartbeat timeout
    passed. Run before every request moto answers, so whatever a client
    reads reflects the time: as on AWS, nobody needs to ask for it."""
    if not _waiting_backends:
        return
    with _lock:
        now = _clock()
        for backend in list(_waiting_backends):
            for group in list(getattr(backend, "autoscaling_groups", {}).values()):
                for state in list(group.instance_states):
                    for name, action in list((getattr(state, "actions", None) or {}).items()):
                        if now >= min(action["deadline"], action["end"]) and state.lifecycle_state == "Terminating:Wait":
                            _complete(backend, group, state, name, action["default"])


def _waiting_state(backend, group_name, hook_name, instance_id, token):
    """The instance waiting on hook_name in group_name, by instance id or by
    token, with AWS's errors."""
    group = backend.autoscaling_groups.get(group_name)
    if group is None:
        raise ValidationError("AutoScalingGroup name not found - AutoScalingGroup '%s' not found" % group_name)
    if not backend.describe_lifecycle_hooks(group_name, [hook_name]):
        raise ValidationError("No Lifecycle Hook found for Auto Scaling group %s with name %s" % (group_name, hook_name))
    for state in group.instance_states:
        action = (getattr(state, "actions", None) or {}).get(hook_name)
        if action is None:
            continue
        if (instance_id and state.instance.id == instance_id) or (token and action["token"] == token):
            return group, state, action
    if instance_id:
        raise ValidationError("No active Lifecycle Action found with instance ID %s" % instance_id)
    raise ValidationError("No active Lifecycle Action found with token %s" % token)


def set_desired_capacity(self, new_capacity):
    """AWS counts neither an instance leaving (Terminating:*) nor one in
    standby: it launches for the difference, and picks what to scale in by
    its default termination policy: the zone with the most instances, then
    instances not on the group's current launch template version (the
    oldest first), then (AWS: the closest to the next billing hour, else at
    random) the oldest launched. Each goes through the termination hooks.
    moto picked the first instances of its list and terminated at once. A
    group with a mixed instances policy keeps moto's behaviour."""
    policy = self.mixed_instances_policy or {}
    if policy and policy.get("LaunchTemplate", {}).get("Overrides"):
        return _moto["set_desired"](self, new_capacity)
    with _lock:
        self.desired_capacity = self.min_size if new_capacity is None else new_capacity
        active = self.active_instances()
        delta = (self.desired_capacity or 0) - len(active)
        backend = self.autoscaling_backend
        if delta > 0:
            self.replace_autoscaling_group_instances(delta, self.get_propagated_tags())
        elif delta < 0:
            force = getattr(self, "force_delete", False)
            for state in _scale_in_order(self, active, -delta):
                _begin_termination(backend, self, state, hooks=not force)
        if self.name in backend.autoscaling_groups:
            backend.update_attached_elbs(self.name)
            backend.update_attached_target_groups(self.name)


def _scale_in_order(group, active, n):
    current = None
    if group.ec2_launch_template is not None:
        current = group.ec2_launch_template.get_version(group.launch_template_version).number
    left = [s for s in active if not s.protected_from_scale_in]
    picked = []
    while left and len(picked) < n:
        zones = {}
        for s in active:
            if s not in picked:
                zones[s.instance.availability_zone] = zones.get(s.instance.availability_zone, 0) + 1
        top = max(zones.get(s.instance.availability_zone, 0) for s in left)
        pool = [s for s in left if zones.get(s.instance.availability_zone, 0) == top]

        def key(s):
            v = getattr(s, "launched_version", 0)
            return (0 if current is not None and v != current else 1, v, s.instance.launch_time, s.instance.id)

        s = min(pool, key=key)
        picked.append(s)
        left.remove(s)
    return picked


def terminate_instance(self, instance_id, should_decrement):
    """TerminateInstanceInAutoScalingGroup: the instance goes through the
    termination hooks; without decrement the group launches its replacement
    at once (the leaving one no longer counts). AWS refuses a decrement below
    the group's minimum size, and an unknown instance; moto terminated at
    once and failed on an unknown one with an internal error. An instance
    already terminating is refused too (kube-aws must not ask twice)."""
    with _lock:
        for group in self.autoscaling_groups.values():
            state = next((s for s in group.instance_states if s.instance.id == instance_id), None)
            if state is not None:
                break
        else:
            raise ValidationError("Instance Id not found - No managed instance found for instance ID: %s" % instance_id)
        if state.lifecycle_state.startswith("Terminating"):
            raise ValidationError("The instance %s is already %s." % (instance_id, state.lifecycle_state))
        original = group.desired_capacity
        if should_decrement:
            if group.desired_capacity <= (group.min_size or 0):
                raise ValidationError(
                    "Currently, desiredSize equals minSize (%d). Terminating instance without replacement will violate "
                    "group's min size constraint. Either set shouldDecrementDesiredCapacity flag to false or lower "
                    "group's min size." % (group.min_size or 0)
                )
            group.desired_capacity -= 1
        activity = asm.TerminateInstanceActivity(state.instance, original)
        _begin_termination(self, group, state)
        group.set_desired_capacity(group.desired_capacity)
        return activity


def delete_auto_scaling_group(self, group_name):
    """Deleting a group terminates its instances at once, hooks skipped (as
    ForceDelete does on AWS; CloudFormation on AWS waits for the hooks, which
    moto's synchronous stacks cannot)."""
    with _lock:
        group = self.autoscaling_groups.get(group_name)
        if group is not None:
            group.force_delete = True
            for state in list(group.instance_states):
                if state.lifecycle_state.startswith("Terminating"):
                    _terminate(self, group, state)
        return _moto["delete_group"](self, group_name)


def update_attached_target_groups(self, group_name):
    """An instance is a target while InService: AWS registers it then and
    deregisters it when it leaves service. moto registered every instance
    of the group, a terminating one again."""
    group = self.autoscaling_groups[group_name]
    if not group.target_group_arns:
        return
    in_service = {s.instance.id for s in group.active_instances()}
    out = [s.instance.id for s in group.instance_states if s.instance.id not in in_service]
    for tg in self.elbv2_backend.describe_target_groups(target_group_arns=group.target_group_arns, load_balancer_arn=None, names=None):
        self.elbv2_backend.register_targets(tg.arn, [{"Id": i, "Port": tg.port} for i in sorted(in_service)])
        _deregister_targets(self, tg.arn, out)


# Two actions moto 5.2.1 does not implement.


def complete_lifecycle_action(self):
    result = self._get_param("LifecycleActionResult")
    if result not in ("CONTINUE", "ABANDON"):
        raise ValidationError("LifecycleActionResult must be CONTINUE or ABANDON, not %r" % result)
    with _lock:
        group, state, _ = _waiting_state(
            self.autoscaling_backend,
            self._get_param("AutoScalingGroupName"),
            self._get_param("LifecycleHookName"),
            self._get_param("InstanceId"),
            self._get_param("LifecycleActionToken"),
        )
        _complete(self.autoscaling_backend, group, state, self._get_param("LifecycleHookName"), result)
    return EmptyResult()


def record_lifecycle_action_heartbeat(self):
    with _lock:
        _, _, action = _waiting_state(
            self.autoscaling_backend,
            self._get_param("AutoScalingGroupName"),
            self._get_param("LifecycleHookName"),
            self._get_param("InstanceId"),
            self._get_param("LifecycleActionToken"),
        )
        action["deadline"] = _clock() + action["timeout"]
    return EmptyResult()


def dispatch(self, environ, start_response):
    _expire()
    return _moto["dispatch"](self, environ, start_response)


def _patch_autoscaling_models(module):
    global asm, ValidationError, LoadBalancerNotFoundError, ELBClientError
    asm = module
    from moto.autoscaling.exceptions import ValidationError
    from moto.elb.exceptions import LoadBalancerNotFoundError
    from moto.elbv2.exceptions import ELBClientError

    group, backend, state = module.FakeAutoScalingGroup, module.AutoScalingBackend, module.InstanceState
    _moto.update(
        create_group=_original(group, "create_from_cloudformation_json").__func__,
        update_group=_original(group, "update_from_cloudformation_json").__func__,
        set_desired=_original(group, "set_desired_capacity"),
        instance_lt=_original(state, "launch_template"),
        delete_group=_original(backend, "delete_auto_scaling_group"),
    )
    for owner, name in ((group, "replace_autoscaling_group_instances"), (backend, "terminate_instance"), (backend, "update_attached_target_groups")):
        _original(owner, name)
    group.create_from_cloudformation_json = create_from_cloudformation_json
    group.update_from_cloudformation_json = update_from_cloudformation_json
    group.replace_autoscaling_group_instances = replace_autoscaling_group_instances
    group.set_desired_capacity = set_desired_capacity
    state.launch_template = instance_launch_template
    backend.terminate_instance = terminate_instance
    backend.delete_auto_scaling_group = delete_auto_scaling_group
    backend.update_attached_target_groups = update_attached_target_groups


def _patch_autoscaling_responses(module):
    global EmptyResult
    from moto.core.responses import EmptyResult

    for name, fn in (("complete_lifecycle_action", complete_lifecycle_action), ("record_lifecycle_action_heartbeat", record_lifecycle_action_heartbeat)):
        if hasattr(module.AutoScalingResponse, name):
            _fail("moto %s implements %s now: drop this file's version of it" % (MOTO_VERSION, name))
        setattr(module.AutoScalingResponse, name, fn)


def _patch_cloudformation_parsing(module):
    global cfp
    cfp = module
    _moto["resource_diff"] = _original(module.ResourceMap, "build_resource_diff")
    module.ResourceMap.build_resource_diff = build_resource_diff


def change_set_diff(self):
    """moto lists a change set's changes without its parameters, so a change
    that comes only through parameters listed nothing; AWS lists the
    resources that read them."""
    rm = self.stack.resource_map
    rm._kube_aws_parameters = self.parameters
    try:
        return _moto["change_set_diff"](self)
    finally:
        del rm._kube_aws_parameters


def change_set_apply(self):
    """Executing a change set updates the stack's template, parameters and
    outputs on AWS; moto updated only its resources, so DescribeStacks kept
    the outputs (a literal one such as the cluster's Kubernetes version) of
    the template before."""
    _moto["change_set_apply"](self)
    st = self.stack
    st.template = self.template
    st._parse_template()
    if self.parameters:
        st.parameters = self.parameters
    st.output_map = st._create_output_map()


def _patch_cloudformation_models(module):
    _moto["change_set_diff"] = _original(module.ChangeSet, "diff")
    _moto["change_set_apply"] = _original(module.ChangeSet, "apply")
    module.ChangeSet.diff = change_set_diff
    module.ChangeSet.apply = change_set_apply


def _patch_werkzeug_app(module):
    _moto["dispatch"] = _original(module.DomainDispatcherApplication, "__call__")
    module.DomainDispatcherApplication.__call__ = dispatch

# --- IAM OIDC providers in CloudFormation ------------------------------------

OIDC_TYPE = "AWS::IAM::OIDCProvider"
# The stack-made provider class (set as moto.iam.models is patched); kept
# here too, as CloudFormation finds its types among the live subclasses of
# its model class.
OIDCProviderResource = None


def _iam_backend(account_id, region_name):
    from moto.utilities.utils import get_partition

    return iam.iam_backends[account_id][get_partition(region_name)]


def _oidc_props(cloudformation_json):
    props = cloudformation_json.get("Properties") or {}
    url = props.get("Url")
    if not isinstance(url, str) or not url.startswith("https://"):
        # AWS: "The URL must begin with https://" (moto took any scheme).
        raise iam.ValidationError("Invalid Open ID Connect Provider URL %r: it must begin with https://" % (url,))
    return url, list(props.get("ClientIdList") or []), list(props.get("ThumbprintList") or []), list(props.get("Tags") or [])


def _make_oidc_provider_class(module):
    """moto's OpenIDConnectProvider as a CloudFormation resource: the
    provider a stack creates is the one IAM's API lists, gets and deletes
    (moto 5.2.1 skipped the type, and dropped every Ref to it from the
    template, so a role's trust policy lost its Federated principal)."""
    from moto.core.common_models import CloudFormationModel

    class OIDCProviderResource(module.OpenIDConnectProvider, CloudFormationModel):
        # moto files its models by the service its module names.
        __module__ = module.__name__

        @staticmethod
        def cloudformation_name_type():
            return ""

        @staticmethod
        def cloudformation_type():
            return OIDC_TYPE

        @classmethod
        def has_cfn_attr(cls, attr):
            return attr == "Arn"

        @property
        def physical_resource_id(self):
            return self.arn  # Ref is the ARN, as on AWS

        def get_cfn_attribute(self, attribute_name):
            # Imported here: moto's CloudFormation package imports IAM's.
            from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

            if attribute_name == "Arn":
                return self.arn
            raise UnformattedGetAttTemplateException()

        @classmethod
        def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
            url, client_ids, thumbprints, tags = _oidc_props(cloudformation_json)
            provider = _iam_backend(account_id, region_name).create_open_id_connect_provider(url, thumbprints, client_ids, tags)
            # The backend made moto's provider; it is this class from now
            # on, the same object IAM's API answers with.
            provider.__class__ = cls
            return provider

        @classmethod
        def update_from_cloudformation_json(cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name):
            """AWS replaces the provider when its Url changes and updates
            its client ids, thumbprints and tags in place (moto would have
            had nothing to update)."""
            url, client_ids, thumbprints, tags = _oidc_props(cloudformation_json)
            backend = _iam_backend(account_id, region_name)
            old = original_resource
            new_url = url[len("https://"):].rstrip("/")
            if new_url != old.url.rstrip("/"):
                new = cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)
                backend.delete_open_id_connect_provider(old.arn)
                return new
            old.client_id_list = client_ids
            old.thumbprint_list = thumbprints
            old.tags = backend._tag_verification(tags)
            return old

        @classmethod
        def delete_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name):
            _iam_backend(account_id, region_name).delete_open_id_connect_provider(resource_name)

    return OIDCProviderResource


def _patch_iam_models(module):
    global iam, OIDCProviderResource
    iam = module
    for name in ("create_open_id_connect_provider", "delete_open_id_connect_provider", "get_role_by_arn"):
        _original(module.IAMBackend, name)
    OIDCProviderResource = _make_oidc_provider_class(module)


# --- STS AssumeRoleWithWebIdentity verifies the token ------------------------

WEB_IDENTITY_ACTION = "sts:AssumeRoleWithWebIdentity"
# How far a token's iat and nbf may be ahead of this clock.
CLOCK_SKEW = 300
# The JWS algorithms this file verifies, by the hash each signs.
RSA_HASHES = {"RS256": "SHA256", "RS384": "SHA384", "RS512": "SHA512"}
S3_HOST = re.compile(r"^(?:(?P<bucket>.+)\.)?s3(?:[.-](?P<region>[a-z0-9-]+))?\.amazonaws\.com(?:\.cn)?$")
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


def _b64url(part, what):
    import base64

    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (ValueError, TypeError):
        raise _sts_error("InvalidIdentityToken", "The web identity token's %s is not base64url" % what)


def _json(data, what):
    import json

    try:
        value = json.loads(data)
    except ValueError as e:
        raise _sts_error("InvalidIdentityToken", "%s is not JSON (%s)" % (what, e))
    if not isinstance(value, dict):
        raise _sts_error("InvalidIdentityToken", "%s is not a JSON object" % what)
    return value


def _sts_error(code, message):
    # moto finds the error's shape (its HTTP status) by the service of the
    # exception's module.
    from moto.sts.exceptions import STSClientError

    return STSClientError(code, message)


def _fetch(url):
    """GET url as STS would, anonymously, over the internet, which the
    harness has not: an object of moto's S3 named by its https URL
    (virtual-hosted or path style), refused unless anyone may read it (its
    ACL grants AllUsers READ, or its bucket's policy allows s3:GetObject to
    "*"), as S3 refuses STS then."""
    import json
    from urllib.parse import urlparse

    from moto.s3.models import s3_backends

    def fail(why):
        return _sts_error("InvalidIdentityToken", "Couldn't retrieve verification key from your identity provider: %s %s" % (url, why))

    u = urlparse(url)
    m = S3_HOST.match(u.hostname or "")
    if u.scheme != "https" or m is None:
        raise fail("is not an https URL of S3 (the harness has no internet, it reads its own S3)")
    bucket_name, path = m.group("bucket"), u.path.lstrip("/")
    if bucket_name is None:
        bucket_name, _, path = path.partition("/")
    where = s3_backends.bucket_accounts.get(bucket_name)
    if where is None:
        raise fail("names bucket %s, which does not exist" % bucket_name)
    partition, owner = where
    backend = s3_backends[owner][partition]
    bucket = backend.get_bucket(bucket_name)
    region = m.group("region")
    if region and region != bucket.region_name:
        raise fail("names region %s, bucket %s is in %s (S3 redirects, STS does not follow)" % (region, bucket_name, bucket.region_name))
    key = backend.get_object(bucket_name, path)
    if key is None:
        raise fail("is not there (S3 answers 404 NoSuchKey or, to anonymous readers, 403)")
    block = bucket.public_access_block
    public = key.acl is not None and key.acl.public_read and not (block and block.ignore_public_acls)
    if not public and bucket.policy and not (block and block.restrict_public_buckets):
        resource = "arn:%s:s3:::%s/%s" % (partition, bucket_name, path)
        for st in _list(json.loads(bucket.policy).get("Statement")):
            principal = st.get("Principal")
            if st.get("Effect") == "Allow" and "Condition" not in st and (principal == "*" or (isinstance(principal, dict) and "*" in _list(principal.get("AWS")))):
                if any(_glob(a, "s3:GetObject", ignore_case=True) for a in _list(st.get("Action"))) and any(
                    _glob(r, resource) for r in _list(st.get("Resource"))
                ):
                    public = True
    if not public:
        raise fail("is not publicly readable (S3 answers 403 AccessDenied to an anonymous reader)")
    return key.value


def _list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _glob(pattern, value, ignore_case=False):
    """IAM's StringLike: * any run of characters, ? one; nothing else is special."""
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, re.DOTALL | (re.IGNORECASE if ignore_case else 0)) is not None


def _verification_key(issuer, kid):
    """The issuer's key kid: its discovery document
    (<iss>/.well-known/openid-configuration), whose issuer must be iss, names
    the JWKS (jwks_uri), which holds the key."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    discovery_url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    discovery = _json(_fetch(discovery_url), "The discovery document " + discovery_url)
    if discovery.get("issuer") != issuer:
        raise _sts_error("InvalidIdentityToken", "The discovery document %s names issuer %r, the token %r" % (discovery_url, discovery.get("issuer"), issuer))
    jwks_uri = discovery.get("jwks_uri")
    if not isinstance(jwks_uri, str):
        raise _sts_error("InvalidIdentityToken", "The discovery document %s has no jwks_uri" % discovery_url)
    keys = _list(_json(_fetch(jwks_uri), "The key set " + jwks_uri).get("keys"))
    found = [k for k in keys if isinstance(k, dict) and k.get("kty") == "RSA" and (kid is None or k.get("kid") == kid)]
    if len(found) != 1:
        why = "has no RSA key with kid %r" % kid if kid is not None else "has %d RSA keys and the token names none (no kid)" % len(found)
        raise _sts_error("InvalidIdentityToken", "Couldn't retrieve verification key from your identity provider: %s %s" % (jwks_uri, why))
    k = found[0]
    try:
        n = int.from_bytes(_b64url(k["n"], "key's n"), "big")
        e = int.from_bytes(_b64url(k["e"], "key's e"), "big")
        return rsa.RSAPublicNumbers(e, n).public_key()
    except (KeyError, ValueError, TypeError) as err:
        raise _sts_error("InvalidIdentityToken", "The key %r of %s is not an RSA public key (%s)" % (kid, jwks_uri, err))


def _verify_web_identity(token, role_arn):
    """What STS checks before it answers AssumeRoleWithWebIdentity; returns
    (provider, claims, audience). moto 5.2.1 accepted any token for any role."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    parts = (token or "").split(".")
    if len(parts) != 3:
        raise _sts_error("InvalidIdentityToken", "The web identity token is not a JWT (header.payload.signature)")
    header = _json(_b64url(parts[0], "header"), "The web identity token's header")
    claims = _json(_b64url(parts[1], "payload"), "The web identity token's payload")
    signature = _b64url(parts[2], "signature")

    m = re.match(r"^arn:([^:]+):iam::(\d{12}):role/", role_arn or "")
    if m is None:
        raise _sts_error("ValidationError", "%r is not a role ARN" % role_arn)
    partition, account_id = m.groups()
    iss = claims.get("iss")
    if not isinstance(iss, str) or not iss.startswith("https://"):
        raise _sts_error("InvalidIdentityToken", "The web identity token's iss %r is not an https URL" % (iss,))
    backend = iam.iam_backends[account_id][partition]
    provider_arn = "arn:%s:iam::%s:oidc-provider/%s" % (partition, account_id, iss[len("https://"):].rstrip("/"))
    provider = backend.open_id_providers.get(provider_arn)
    if provider is None:
        raise _sts_error("InvalidIdentityToken", "No OpenIDConnect provider found in your account for %s" % iss)

    alg = header.get("alg")
    if alg not in RSA_HASHES:
        raise _sts_error("InvalidIdentityToken", "The web identity token's alg %r is not one this harness verifies (%s)" % (alg, ", ".join(RSA_HASHES)))
    key = _verification_key(iss, header.get("kid"))
    try:
        key.verify(signature, (parts[0] + "." + parts[1]).encode(), padding.PKCS1v15(), getattr(hashes, RSA_HASHES[alg])())
    except InvalidSignature:
        raise _sts_error("InvalidIdentityToken", "The web identity token's signature does not verify with key %r of %s" % (header.get("kid"), iss))

    now = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)):
        raise _sts_error("InvalidIdentityToken", "The web identity token has no exp")
    if exp <= now:
        raise _sts_error("ExpiredTokenException", "Token expired: current date/time %d must be before the expiration date/time %d" % (now, exp))
    for claim in ("nbf", "iat"):
        v = claims.get(claim)
        if v is not None and (not isinstance(v, (int, float)) or v > now + CLOCK_SKEW):
            raise _sts_error("InvalidIdentityToken", "The web identity token's %s %r is in the future (now %d)" % (claim, v, now))
    audience = next((a for a in _list(claims.get("aud")) if a in provider.client_id_list), None)
    if audience is None:
        raise _sts_error("InvalidIdentityToken", "Incorrect token audience: %r is none of the client ids of %s" % (claims.get("aud"), provider_arn))
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise _sts_error("InvalidIdentityToken", "The web identity token has no sub")

    try:
        role = backend.get_role_by_arn(role_arn)
    except Exception:
        raise _NotAuthorized()
    context = {provider.url + ":sub": claims["sub"], provider.url + ":aud": audience}
    if not _trusts(role.assume_role_policy_document, provider_arn, context):
        raise _NotAuthorized()
    return provider, claims, audience


# The condition operators _trusts evaluates; any other denies.
CONDITIONS = {
    "StringEquals": lambda want, got: want == got,
    "StringNotEquals": lambda want, got: want != got,
    "StringLike": lambda want, got: _glob(want, got),
    "StringNotLike": lambda want, got: not _glob(want, got),
}


def _trusts(document, provider_arn, context):
    """Whether the role's trust policy lets the provider's token holder
    assume it: an Allow statement for sts:AssumeRoleWithWebIdentity whose
    Principal is Federated by the provider (or "*") and whose conditions on
    <url>:sub and <url>:aud hold, and no Deny statement that applies. A key
    the token does not give (any other) is absent, as on AWS: StringEquals
    and StringLike on it fail, their Not forms hold. A statement with
    NotPrincipal, NotAction or an operator not in CONDITIONS denies."""
    import json

    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return False
    ctx = {k.lower(): v for k, v in context.items()}
    allowed = False
    for st in _list((document or {}).get("Statement")):
        if "NotPrincipal" in st or "NotAction" in st:
            return False
        if not any(_glob(a, WEB_IDENTITY_ACTION, ignore_case=True) for a in _list(st.get("Action"))):
            continue
        principal = st.get("Principal")
        if not (principal == "*" or (isinstance(principal, dict) and provider_arn in _list(principal.get("Federated")))):
            continue
        holds = True
        for op, keys in (st.get("Condition") or {}).items():
            test = CONDITIONS.get(op)
            if test is None or not isinstance(keys, dict):
                return False
            for key, wants in keys.items():
                got = ctx.get(key.lower())
                if got is None:
                    holds = holds and op.startswith("StringNot")
                elif op.startswith("StringNot"):
                    holds = holds and all(test(w, got) for w in _list(wants))
                else:
                    holds = holds and any(test(w, got) for w in _list(wants))
        if not holds:
            continue
        if st.get("Effect") == "Deny":
            return False
        if st.get("Effect") == "Allow":
            allowed = True
    return allowed


def assume_role_with_web_identity(self):
    """AWS verifies the token (its issuer an OIDC provider of the role's
    account, its signature by a key the issuer publishes, its time and
    audience) and the role's trust policy; moto 5.2.1 accepted any token
    for any role. The answer also says whose token it was
    (SubjectFromWebIdentityToken, Provider, Audience), and AssumedRoleId is
    the role's id and the session, as GetCallerIdentity's UserId."""
    role_arn = self._get_param("RoleArn")
    try:
        provider, claims, audience = _verify_web_identity(self._get_param("WebIdentityToken"), role_arn)
    except _NotAuthorized as e:
        # STS's model has no AccessDenied, so moto would answer it with
        # HTTP 400; AWS answers 403.
        _, headers, body = self.serialized(ActionResult(e))
        headers["status"] = 403
        return body, headers
    role = self.backend.assume_role_with_web_identity(
        region_name=self.region,
        role_session_name=self._get_param("RoleSessionName"),
        role_arn=role_arn,
        policy=self._get_param("Policy"),
        duration=self._get_int_param("DurationSeconds", 3600),
        external_id=self._get_param("ExternalId"),
    )
    return ActionResult(
        {
            "Credentials": role,
            "AssumedRoleUser": {"AssumedRoleId": role.user_id, "Arn": role.arn},
            "PackedPolicySize": 6,
            "SubjectFromWebIdentityToken": claims["sub"],
            # AWS answers the provider's ARN for an OIDC provider's token.
            "Provider": provider.arn,
            "Audience": audience,
        }
    )


def _patch_sts_responses(module):
    global ActionResult, _NotAuthorized
    from moto.core.responses import ActionResult
    from moto.sts.exceptions import STSClientError

    class _NotAuthorized(STSClientError):
        """STS's AccessDenied when the role does not trust the token."""

        __module__ = "moto.sts.exceptions"  # the service moto serializes it for
        code = "AccessDenied"
        message = "Not authorized to perform " + WEB_IDENTITY_ACTION

    _original(module.TokenResponse, "assume_role_with_web_identity")
    module.TokenResponse.assume_role_with_web_identity = assume_role_with_web_identity


PATCHES = {
    "moto.autoscaling.models": _patch_autoscaling_models,
    "moto.autoscaling.responses": _patch_autoscaling_responses,
    "moto.cloudformation.parsing": _patch_cloudformation_parsing,
    "moto.cloudformation.models": _patch_cloudformation_models,
    "moto.moto_server.werkzeug_app": _patch_werkzeug_app,
    "moto.iam.models": _patch_iam_models,
    "moto.sts.responses": _patch_sts_responses,
}


def main(argv):
    _check_moto()
    for name, patch in PATCHES.items():
        if name in sys.modules:  # imported by moto's package already
            patch(sys.modules[name])
    sys.meta_path.insert(0, _PatchOnImport({n: p for n, p in PATCHES.items() if n not in sys.modules}))
    from moto.server import main as moto_main

    moto_main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
