"""The seven exercises as data: steps to run, the result files they leave, and pure checks.

A step is either a shell line (``Step.cmd``) that calls ``aiplat`` exactly as the guide
shows it, run from the repository root with ``$COURSE`` naming the participant's result
folder, or an action (``Step.action``) for what has no registered command yet; the guide
shows an action as ``aiplat lab exercise N --step NAME``. Every exercise ends with files
under ``$COURSE/exN/`` that its check reads: a check is a pure function of a
:class:`Files` reader and returns problems (empty: the exercise is done). That is what lets
an instructor run ``aiplat lab exercise N --check`` on a participant's machine, and what
lets unit tests show a check failing on a missing or wrong file.

Every figure a check asserts comes from the other capabilities' own JSON output, so the
check is as strict as the capability and no stricter: it verifies that the participant
produced the result, not that this course re-derived it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.fieldnames import camel_key

LAB_PREFIX = "alab"
"""The lab the course uses unless told another (``--lab``, ``$LAB``): ``aiplat lab up``'s."""
# The steps name the lab through shell variables set from its state (``aiplat lab status
# -o env``), so any lab runs the course: another prefix, other subnets (from a spec).
NODE_NS = "$LAB_NODE"
STORE = "$LAB_STORE"
MODEL_REF = f"{STORE}/course/mini:v1"
POOL = "h100"
LAB_OPT = '--prefix "$LAB"'


class Files(Protocol):
    """Read access to ``$COURSE`` (relative paths); None when a file is missing."""

    def text(self, rel: str) -> str | None: ...


def read_json(files: Files, rel: str) -> tuple[Any, str | None]:
    """``(data, problem)``: the parsed JSON file, or None and why it could not be read."""
    text = files.text(rel)
    if text is None:
        return None, f"{rel} is missing"
    try:  # bounded: a result nested thousands deep is a problem, not a RecursionError
        return inputs.parse_json(text, rel, "a JSON result"), None
    except InputError as e:
        return None, f"{rel} is not a JSON result ({e})"


@dataclass(frozen=True)
class Step:
    """One thing the participant does: a shell line, or an action of this module's runner."""

    title: str
    cmd: str = ""
    action: str = ""
    ok_rc: tuple[int, ...] = (0,)
    note: str = ""


Check = Callable[[Files], list[str]]


@dataclass(frozen=True)
class Exercise:
    number: int
    slug: str
    title: str
    goal: str
    needs_lab: bool
    steps: tuple[Step, ...]
    check: Check
    results: tuple[str, ...]
    means: str
    pitfalls: tuple[str, ...] = field(default=())
    cleanup: str = ""
    """A shell line run after the steps whatever happened (clears the exercise's faults)."""

    def command(self, step: Step) -> str:
        """The line the guide shows (and the runner runs) for a step."""
        return step.cmd or f"aiplat lab exercise {self.number} --step {step.action}"


def _need(files: Files, rel: str, problems: list[str]) -> Any:
    data, problem = read_json(files, rel)
    if problem:
        problems.append(problem)
    return data


def _get(data: Any, *path: str | int) -> Any:
    """The value at ``path``, its field names given as Python names; a file written before
    aiplat's JSON was camelCase has them so, a newer one as ``camel_key`` spells them."""
    for p in path:
        if isinstance(p, int):
            if not isinstance(data, list) or len(data) <= p:
                return None
            data = data[p]
            continue
        if not isinstance(data, Mapping):
            return None
        key = p if p in data else camel_key(p)
        if key not in data:
            return None
        data = data[key]
    return data


# ---------------------------------------------------------------------------- exercise 1


def check_plan(files: Files) -> list[str]:
    problems: list[str] = []
    if files.text("ex1/platform.yaml") is None:
        problems.append("ex1/platform.yaml (the use-case spec) is missing")
    plan = _need(files, "ex1/plan/plan.json", problems)
    if plan is None:
        return problems
    pools = _get(plan, "pools") or []
    if not pools or not all((_get(p, "nodes") or 0) > 0 for p in pools):
        problems.append("plan.json: no pool sized to at least one node")
    if not _get(plan, "roles", "roles") or not _get(plan, "roles", "zones"):
        problems.append("plan.json: no node roles or network zones")
    if not _get(plan, "facility", "it_power_kw"):
        problems.append("plan.json: no power figure")
    if not any(_get(p, "spare_nodes") is not None for p in pools):
        problems.append("plan.json: no reserve (spare nodes) per pool")
    if not _get(plan, "deployment", "recommendation"):
        problems.append("plan.json: no deployment-model choice")
    elif not _get(plan, "deployment", "reasons"):
        problems.append("plan.json: the deployment-model choice has no reasons")
    workloads = _get(plan, "workloads") or []
    kinds = {_get(w, "kind") for w in workloads}
    for want in ("lora", "online-inference", "rag"):
        if want not in kinds:
            problems.append(f"plan.json: the use case has no '{want}' workload")
    return problems


# ---------------------------------------------------------------------------- exercise 2


def check_node(files: Files) -> list[str]:
    problems: list[str] = []
    inv = _need(files, "ex2/inventory.json", problems)
    if inv is not None and not _get(inv, "host", "kernel"):
        problems.append("ex2/inventory.json: no kernel (not an inventory of this host)")
    hgx = _need(files, "ex2/hgx-inventory.json", problems)
    if hgx is not None:
        gpus = [d for d in _get(hgx, "pci") or [] if _get(d, "kind") == "gpu"]
        if len(gpus) != 8:
            problems.append("ex2/hgx-inventory.json: expected the 8 GPUs of the HGX H100 "
                            f"fixture, found {len(gpus)}")
    script = files.text("ex2/prepare.sh")
    if script is None:
        problems.append("ex2/prepare.sh (the reviewed preparation script) is missing")
    elif not script.startswith("#!"):
        problems.append("ex2/prepare.sh is not a script")
    if files.text("ex2/cdi/aiplat-example.com-acc.json") is None and not problems:
        problems.append("ex2/cdi/aiplat-example.com-acc.json (the generated CDI spec) is missing")
    verify = _need(files, "ex2/cdi-verify.json", problems)
    if verify is not None:
        rows = [r for f in (verify if isinstance(verify, list) else [verify])
                for r in _get(f, "results") or []]
        bad = [r for r in rows if _get(r, "ok") is not True]
        if not rows or bad:
            problems.append(f"ex2/cdi-verify.json: {len(bad)} of {len(rows)} container "
                            "checks did not pass")
    check = _need(files, "ex2/check.json", problems)
    if check is not None and _get(check, "status") != "pass":
        problems.append(f"ex2/check.json: node checks {_get(check, 'status')}, expected pass")
    base = _need(files, "ex2/baseline.json", problems)
    if base is not None and not _get(base, "metrics"):
        problems.append("ex2/baseline.json: no metrics recorded")
    return problems


# ---------------------------------------------------------------------------- exercise 3


TREE_FACTS = (
    ("ex3/kube/cluster/gpu-operator/values.yaml", "", "GPU operator values"),
    ("ex3/kube/cluster/deviceclasses.yaml", "kind: DeviceClass", "DeviceClasses"),
    ("ex3/kube/tenants/serving/resourceclaimtemplates.yaml", "matchAttribute",
     "a claim template with a topology constraint"),
    ("ex3/kube/workloads/examples.yaml", "kueue.x-k8s.io/podset-required-topology",
     "a TAS-annotated job"),
)


def check_kube(files: Files) -> list[str]:
    problems: list[str] = []
    if files.text("ex3/kube/kustomization.yaml") is None:
        problems.append("ex3/kube/kustomization.yaml (the rendered tree) is missing")
    else:
        for rel, needle, what in TREE_FACTS:
            if needle not in (files.text(rel) or ""):
                problems.append(f"ex3/kube: {what} missing ({rel} has no '{needle}')")
    validate = _need(files, "ex3/validate.json", problems)
    if validate is not None:
        errs = _count(validate, "errors")
        if errs is None or errs > 0:
            problems.append(f"ex3/validate.json: {errs} validation errors, expected 0")
    lint = _need(files, "ex3/lint.json", problems)
    if not isinstance(lint, list):
        if lint is not None:
            problems.append("ex3/lint.json: not a list of findings")
    elif [f for f in lint if _get(f, "severity") == "error"]:
        problems.append(f"ex3/lint.json: {len(lint)} findings, "
                        f"{sum(_get(f, 'severity') == 'error' for f in lint)} errors")
    why = _need(files, "ex3/why-pending.json", problems)
    if why is not None and "Topology" not in json.dumps(why):
        problems.append("ex3/why-pending.json: the explanation names no topology reason")
    return problems + check_live_tree(files)


def check_live_tree(files: Files) -> list[str]:
    """What the live cluster said about the tree: applied with nothing refused, workloads
    admitted with their pods on nodes, DRA claims allocated, a live reason for the rest."""
    problems: list[str] = []
    applied = _need(files, "ex3/apply.json", problems)
    if isinstance(applied, list):
        refused = [_get(o, "object") for o in applied
                   if str(_get(o, "action")).endswith("refused")]
        if refused or not applied:
            problems.append(f"ex3/apply.json: refused {refused}" if refused else
                            "ex3/apply.json: nothing applied")
    elif applied is not None:
        problems.append("ex3/apply.json: not the JSON of 'aiplat kube apply -o json'")
    live = _need(files, "ex3/cluster.json", problems)
    if live is not None:
        wls = _get(live, "workloads") or []
        admitted = [w for w in wls if _get(w, "admitted") is True]
        placed = [w for w in admitted
                  if _get(w, "pods") and all(_get(p, "node") for p in _get(w, "pods")[:1])]
        devices = [d for w in admitted for p in _get(w, "pods") or []
                   for d in _get(p, "devices") or []]
        if not placed:
            problems.append("ex3/cluster.json: no admitted workload has pods on nodes")
        if not devices:
            problems.append("ex3/cluster.json: no DRA claim was allocated a device")
    why = _need(files, "ex3/why-pending-live.json", problems)
    if why is not None and not (_get(why, "code") and "Kueue" in json.dumps(why)):
        problems.append("ex3/why-pending-live.json: no live reason with Kueue's own words")
    return problems


def _count(data: Any, key: str) -> int | None:
    """Errors in a validate/lint JSON result, whichever shape it has."""
    if isinstance(data, list):
        counts = [_count(d, key) for d in data]
        return None if any(c is None for c in counts) else sum(c or 0 for c in counts)
    value = _get(data, key)
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return len(value)
    for nested in ("summary", "totals"):
        inner = _get(data, nested)
        if inner is not None:
            return _count(inner, key)
    return None


# ---------------------------------------------------------------------------- exercise 4


def check_sharing(files: Files) -> list[str]:
    problems: list[str] = check_live_queues(files)
    sharing = _need(files, "ex4/sharing.json", problems)
    if sharing is not None and not (_get(sharing, "gpus") or _get(sharing, "layouts")):
        problems.append("ex4/sharing.json: no MIG layout")
    for rel, needle in (("ex3/kube/kueue/cohorts.yaml", "kind: Cohort"),
                        ("ex3/kube/kueue/clusterqueues.yaml", "weight:"),
                        ("ex3/kube/tenants/research/quota.yaml", "kind: ResourceQuota")):
        if needle not in (files.text(rel) or ""):
            problems.append(f"{rel} (from exercise 3) is missing or has no '{needle}'")
    fair = _need(files, "ex4/sim-fair.json", problems)
    classic = _need(files, "ex4/sim-classic.json", problems)
    for name, sim in (("sim-fair", fair), ("sim-classic", classic)):
        if sim is None:
            continue
        tenants = {_get(t, "name"): t for t in _get(sim, "tenants") or []}
        a, b = tenants.get("team-a"), tenants.get("team-b")
        if a is None or b is None:
            problems.append(f"ex4/{name}.json: not a simulation of teams.yaml (no team-a/b)")
            continue
        if not (_get(a, "waiting") or 0) + (_get(b, "waiting") or 0):
            problems.append(f"ex4/{name}.json: no contention (no job of team-a/b waits)")
        if (_get(a, "weight"), _get(b, "weight")) != (1.0, 2.0):
            problems.append(f"ex4/{name}.json: weights are not 1 and 2")
        if name == "sim-fair" and FAIR_SHARING_HONOURED:
            share_a = float(_get(a, "obtainedShare") or 0)
            share_b = float(_get(b, "obtainedShare") or 0)
            if not share_b > FAIR_RATIO * share_a:
                problems.append(f"ex4/{name}.json: team-b (weight 2) got {share_b:.0%}, "
                                f"team-a (weight 1) {share_a:.0%}: weights not honoured")
    return problems


def check_live_queues(files: Files) -> list[str]:
    problems: list[str] = []
    live = _need(files, "ex4/queues-live.json", problems)
    if live is None:
        return problems
    borrow = [w for w in _get(live, "workloads") or [] if "borrow-eval" in str(_get(w, "owner"))]
    if not borrow or _get(borrow[0], "admitted") is not True:
        problems.append("ex4/queues-live.json: the borrowing job was not admitted")
    shares = {_get(q, "name"): _get(q, "weightedShare")
              for q in _get(live, "kueue", "queues") or []}
    if not (shares.get("batch") or 0) > 0:
        problems.append(f"ex4/queues-live.json: batch's weighted share is {shares.get('batch')}"
                        ", expected above 0 while it borrows (is fair sharing on?)")
    return problems


FAIR_SHARING_HONOURED = True
"""Whether the simulator honours weights on a spec-driven run (see docs/lab-guide.md,
exercise 4): it does — with fair sharing team-b's heads preempt team-a's borrowing jobs as
Kueue's strategies allow, so the check demands team-b's share be over ``FAIR_RATIO`` times
team-a's."""
FAIR_RATIO = 1.3
"""Each team keeps its nominal 8 GPUs; only the 16 they borrow split 2:1 by weight (Kueue's
dominant resource share counts what is borrowed): 13.3 and 18.7 of 32 GPUs, a ratio of 1.4.
The one-GPU replicas the plan sizes come within a few GPUs of it (measured 40% / 60%)."""


# ---------------------------------------------------------------------------- exercise 5


def _lab_store(files: Files, problems: list[str]) -> str | None:
    """The lab's model store (host:port) from ``ex5/lab.json`` (``aiplat lab status``)."""
    lab = _need(files, "ex5/lab.json", problems)
    registry = str(_get(lab, "registry") or "")
    if lab is not None and not registry.startswith("http://"):
        problems.append("ex5/lab.json: no model store (registry) of the lab")
    return registry.removeprefix("http://") or None


def check_artifacts(files: Files) -> list[str]:
    problems: list[str] = []
    cold = _need(files, "ex5/pull-cold.json", problems)
    warm = _need(files, "ex5/pull-warm.json", problems)
    if cold is not None:
        if _get(cold, "warm") is not False or not _get(cold, "bytesDownloaded"):
            problems.append("ex5/pull-cold.json: not a cold pull (nothing downloaded)")
        store = _lab_store(files, problems)
        if store and not str(_get(cold, "reference") or "").startswith(f"{store}/"):
            problems.append(f"ex5/pull-cold.json: not pulled from the lab store {store}")
    if warm is not None and (_get(warm, "warm") is not True or _get(warm, "bytesDownloaded")):
        problems.append("ex5/pull-warm.json: the second pull was not served from the cache")
    if cold is not None and warm is not None and _get(cold, "digest") != _get(warm, "digest"):
        problems.append("ex5: cold and warm pulls are of different models")
    bench = _need(files, "ex5/bench.json", problems)
    if bench is not None:
        for word in ("cold", "warm", "load"):
            if _get(bench, "figures", word, "seconds") is None:
                problems.append(f"ex5/bench.json: no measured {word} figure")
    return problems


# ---------------------------------------------------------------------------- exercise 6


def check_diagnosis(files: Files) -> list[str]:
    problems: list[str] = []
    slow = _need(files, "ex6/pull-slow.json", problems)
    cold = _need(files, "ex5/pull-cold.json", problems)
    if slow is not None and cold is not None:
        def rate(p: Any) -> float:
            return float(_get(p, "bytesDownloaded") or 0) / max(float(_get(p, "seconds") or 0),
                                                              1e-9)
        if not rate(slow) * 2 < rate(cold):
            problems.append(f"ex6/pull-slow.json: the pull under the fault "
                            f"({rate(slow) / 2**20:.1f} MiB/s) is not slower than the cold "
                            f"pull of exercise 5 ({rate(cold) / 2**20:.1f} MiB/s)")
    fault = _need(files, "ex6/diagnose-fault.json", problems)
    if fault is not None:
        causes = _get(fault, "causes") or []
        top = causes[0] if causes else None
        if _get(top, "kind") != "slow-storage":
            problems.append("ex6/diagnose-fault.json: the first cause is "
                            f"{_get(top, 'kind')!r}, expected 'slow-storage'")
        elif not _get(top, "evidence"):
            problems.append("ex6/diagnose-fault.json: the cause has no evidence")
    clear = _need(files, "ex6/diagnose-clear.json", problems)
    if clear is not None and _get(clear, "causes"):
        problems.append("ex6/diagnose-clear.json: a cause remains after the fault was cleared")
    return problems


# ---------------------------------------------------------------------------- exercise 7

ACCEPT_CLEAN = "ex7/baseline/acceptance.json"
ACCEPT_REGRESSED = "ex7/regressed/acceptance.json"
REGRESSION_ID = "repeatability.baseline.network.throughput"


def _criteria(rec: Any) -> dict[str, str]:
    return {str(_get(c, "id")): str(_get(c, "status")) for c in _get(rec, "criteria") or []}


def check_acceptance(files: Files) -> list[str]:
    problems: list[str] = []
    matrix = _need(files, "ex7/matrix.json", problems)
    if matrix is not None and _get(matrix, "status") == "fail":
        problems.append("ex7/matrix.json: the version matrix violates a fact")
    base = _need(files, ACCEPT_CLEAN, problems)
    if base is not None:
        crit = _criteria(base)
        if _get(base, "status") != "pass":
            bad = sorted(k for k, v in crit.items() if v not in ("pass", "warn"))
            problems.append(f"{ACCEPT_CLEAN}: acceptance {_get(base, 'status')} ({bad})")
        if not any(k.startswith("repeatability.cv.") for k in crit):
            problems.append(f"{ACCEPT_CLEAN}: no repeatability statistics")
        if not _get(base, "matrix", "matched"):
            problems.append(f"{ACCEPT_CLEAN}: the node matched no approved matrix entry")
    if files.text("ex7/baseline/acceptance.html") is None:
        problems.append("ex7/baseline/acceptance.html (the acceptance report) is missing")
    reg = _need(files, ACCEPT_REGRESSED, problems)
    if reg is not None:
        status = _criteria(reg).get(REGRESSION_ID)
        if status != "fail":
            problems.append(f"{ACCEPT_REGRESSED}: the introduced regression was not caught "
                            f"({REGRESSION_ID} is {status})")
    diff = _need(files, "ex7/compare.json", problems)
    if diff is not None and _get(diff, "regressed") is not True:
        problems.append("ex7/compare.json: the comparison shows no regression")
    return problems


# ---------------------------------------------------------------------------- the course

TEAMS_SPEC = """\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: teams}
kubernetes: {version: "1.34", kueueVersion: 0.19.2}
site: {powerBudgetKW: 100, rackPowerLimitKW: 40}
pools:
  - name: l40s
    node: {nodeType: pcie-l40s-4, gpu: {model: L40S, count: 4}, cpuCores: 64, memoryGiB: 512}
    count: 8
tenants:
  - {name: team-a, weight: 1, quota: {l40s: {gpus: 8, borrowingLimit: 24}}}
  - {name: team-b, weight: 2, quota: {l40s: {gpus: 8, borrowingLimit: 24}}}
  - {name: idle, weight: 1, quota: {l40s: {gpus: 16}}}
workloads:
  - {name: eval-a, kind: batch-inference, tenant: team-a, pool: l40s, model: llama-3-8b,
     data: {tokens: 6.0e+9}, slo: {completionHours: 8, promptTokens: 1500, outputTokens: 500},
     runsPerMonth: 60}
  - {name: eval-b, kind: batch-inference, tenant: team-b, pool: l40s, model: llama-3-8b,
     data: {tokens: 6.0e+9}, slo: {completionHours: 8, promptTokens: 1500, outputTokens: 500},
     runsPerMonth: 60}
"""

AIPLAT_PULL = (f'ip netns exec "{NODE_NS}" aiplat model pull "{MODEL_REF}" --plain-http')
CLUSTER = "course"
BORROW_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: borrow-eval
  namespace: batch
  labels: {kueue.x-k8s.io/queue-name: batch, kueue.x-k8s.io/priority-class: batch}
spec:
  parallelism: 3
  completions: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      priorityClassName: aiplat-batch
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      nodeSelector: {aiplat.io/pool: l40s}
      resourceClaims: [{name: gpus, resourceClaimTemplateName: l40s-gpu-4}]
      containers:
      - name: main
        image: vllm/vllm-openai:v0.11.0
        resources:
          requests: {cpu: "8", memory: 64Gi}
          limits: {cpu: "8", memory: 64Gi}
          claims: [{name: gpus}]
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
          runAsNonRoot: true
          runAsUser: 1000
          seccompProfile: {type: RuntimeDefault}
"""

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        number=1, slug="plan", needs_lab=False,
        title="From an AI use case to a sized target architecture and node roles",
        goal="Describe the use case (a 70B model fine-tuned weekly with LoRA, served to "
             "users online and through a RAG service) as a platform spec, and size it.",
        steps=(
            Step("Start from the example spec: it holds exactly this use case",
                 cmd="mkdir -p \"$COURSE/ex1\" && aiplat spec example > "
                     "\"$COURSE/ex1/platform.yaml\""),
            Step("Validate it", cmd="aiplat spec validate \"$COURSE/ex1/platform.yaml\""),
            Step("Size it: pools, node roles, zones, power, reserve, deployment model",
                 cmd="aiplat plan \"$COURSE/ex1/platform.yaml\" -d \"$COURSE/ex1/plan\""),
        ),
        check=check_plan, results=("ex1/platform.yaml", "ex1/plan/plan.json"),
        means="The Pools table gives nodes, GPUs, peak/average demand, spares and kW per "
              "pool; the last lines give IT power against the site budget and the deployment "
              "model. `plan.json` keeps every figure with its formula and inputs; "
              "`report.html` shows node roles, zones and the deployment scores with reasons.",
        pitfalls=("`aiplat spec validate` names the file, line and field of a typo and "
                  "suggests the fix; `plan` exits 1 when a finding is an error (e.g. the "
                  "power budget is exceeded).",
                  "A warning such as 'jobs will queue' is a sizing decision, not an error: "
                  "accept queueing or grow the pool.")),
    Exercise(
        number=2, slug="node", needs_lab=False,
        title="Inventory a Linux accelerator node, prepare it, validate it with test containers",
        goal="Inventory the lab host and a recorded 8-GPU HGX H100, review the preparation "
             "script, prove CDI device specs in Podman containers, run the node checks and "
             "record a baseline.",
        steps=(
            Step("Inventory this host",
                 cmd="mkdir -p \"$COURSE/ex2\" && aiplat node inventory -o json > "
                     "\"$COURSE/ex2/inventory.json\""),
            Step("Build the recorded 8-GPU HGX H100 tree and inventory it",
                 cmd="rm -rf \"$COURSE/ex2/hgx\" && aiplat samples get node-hgx-h100 -d "
                     "\"$COURSE/ex2/hgx\" >/dev/null "
                     "&& aiplat node inventory --root \"$COURSE/ex2/hgx\" -o json > "
                     "\"$COURSE/ex2/hgx-inventory.json\""),
            Step("Check the HGX node against the h100 pool of the spec",
                 cmd=f"aiplat node check --root \"$COURSE/ex2/hgx\" "
                     f"\"$COURSE/ex1/platform.yaml\" "
                     f"--pool {POOL} -o json > \"$COURSE/ex2/check.json\""),
            Step("Write the preparation script for review (aiplat never runs it)",
                 cmd=f"aiplat node prepare \"$COURSE/ex1/platform.yaml\" --pool {POOL} "
                     "--dry-run -w \"$COURSE/ex2/prepare.sh\" > /dev/null"),
            Step("Make two accelerator device nodes (a major number no driver owns)",
                 cmd="mkdir -p \"$COURSE/ex2/dev\" && rm -f \"$COURSE/ex2/dev/acc0\" "
                     "\"$COURSE/ex2/dev/acc1\" && "
                     "mknod -m 0660 \"$COURSE/ex2/dev/acc0\" c 240 0 && "
                     "mknod -m 0640 \"$COURSE/ex2/dev/acc1\" c 240 1"),
            Step("Generate their CDI spec",
                 cmd="aiplat cdi generate "
                     "--char example.com/acc=0:/dev/acc0=\"$COURSE/ex2/dev/acc0\""
                     " --char example.com/acc=1:/dev/acc1=\"$COURSE/ex2/dev/acc1\" "
                     "--write \"$COURSE/ex2/cdi\""),
            Step("Prove every device in a Podman container (and none without a request)",
                 cmd="aiplat cdi verify \"$COURSE/ex2/cdi/aiplat-example.com-acc.json\" "
                     "--remove-image -o json > "
                     "\"$COURSE/ex2/cdi-verify.json\""),
            Step("Record a short baseline",
                 cmd="aiplat node baseline record --runs 3 --scale 0.1 "
                     "-w \"$COURSE/ex2/baseline.json\""),
        ),
        check=check_node,
        results=("ex2/inventory.json", "ex2/hgx-inventory.json", "ex2/check.json",
                 "ex2/prepare.sh", "ex2/cdi-verify.json", "ex2/baseline.json"),
        means="The inventory lists PCI devices, NUMA, driver, runtimes and CDI specs; the HGX "
              "tree shows 8 GPUs each with its rail NIC under one PCIe switch. `cdi verify` "
              "proves node type, major/minor, permissions and isolation in real containers. "
              "The baseline stores medians with robust spread for later comparison.",
        pitfalls=("`node check` fails with the device and threshold, e.g. 'link trained at "
                  "x8, capable of x16' or an IB port DOWN (try `--root` on the tree `aiplat "
                  "samples get node-hgx-h100-degraded` writes).",
                  "`cdi verify` needs Podman with `--runtime runc` here (crun fails on hybrid "
                  "cgroups); it names the device whose mode, owner or env differs.")),
    Exercise(
        number=3, slug="kube", needs_lab=False,
        title="Kubernetes with the GPU operator, a DRA device claim and topology-aware placement",
        goal="Render the cluster tree (operator values, DeviceClasses, claim templates, "
             "TAS-annotated jobs), validate and lint it, and explain a job whose topology "
             "requirement cannot be met.",
        steps=(
            Step("Render the tree",
                 cmd="mkdir -p \"$COURSE/ex3\" && aiplat kube render \"$COURSE/ex1/platform.yaml\" "
                     "-d \"$COURSE/ex3/kube\""),
            Step("Validate against Kubernetes schemas and the CRDs",
                 cmd="aiplat kube validate \"$COURSE/ex3/kube\" "
                     "-o json > \"$COURSE/ex3/validate.json\""),
            Step("Lint across layers",
                 cmd="aiplat kube lint \"$COURSE/ex3/kube\" -o json > \"$COURSE/ex3/lint.json\""),
            Step("Explain a pending job on a recorded cluster snapshot",
                 cmd="rm -rf \"$COURSE/ex3/snapshot\" && aiplat samples get "
                     "snapshot-tas-rack-too-small -d \"$COURSE/ex3/snapshot\" >/dev/null && "
                     "aiplat kube why-pending pretrain-big -n research --snapshot "
                     "\"$COURSE/ex3/snapshot\" -o json > \"$COURSE/ex3/why-pending.json\""),
            Step("Start a real control plane (Kubernetes, Kueue, JobSet) with kwok nodes for "
                 "the spec's pools and the DRA driver's ResourceSlices",
                 cmd=f"aiplat lab cluster status --name {CLUSTER} >/dev/null 2>&1 || aiplat "
                     f"lab cluster up \"$COURSE/ex1/platform.yaml\" --name {CLUSTER}"),
            Step("Apply the tree and its opt-in example workloads: a server dry run first, "
                 "then for real",
                 cmd=f"kc=\"$(aiplat lab cluster kubeconfig --name {CLUSTER})\" && aiplat kube "
                     "apply --kubeconfig \"$kc\" --dry-run=server \"$COURSE/ex3/kube\" "
                     "\"$COURSE/ex3/kube/workloads\" >/dev/null && "
                     "aiplat kube apply --kubeconfig \"$kc\" \"$COURSE/ex3/kube\" "
                     "\"$COURSE/ex3/kube/workloads\" -o json > \"$COURSE/ex3/apply.json\""),
            Step("See where Kueue admitted each workload, where the scheduler put its pods and "
                 "which GPUs their claims got",
                 cmd=f"aiplat lab cluster status --name {CLUSTER} --settle 60 -o json > "
                     "\"$COURSE/ex3/cluster.json\""),
            Step("Ask the live cluster why a workload waits",
                 cmd=f"aiplat kube why-pending nightly-eval -n batch --kubeconfig "
                     f"\"$(aiplat lab cluster kubeconfig --name {CLUSTER})\" -o json > "
                     "\"$COURSE/ex3/why-pending-live.json\""),
        ),
        check=check_kube,
        results=("ex3/kube/kustomization.yaml", "ex3/validate.json", "ex3/lint.json",
                 "ex3/why-pending.json", "ex3/apply.json", "ex3/cluster.json",
                 "ex3/why-pending-live.json"),
        means="`cluster/` holds the GPU operator values and DeviceClasses, `tenants/` the "
              "ResourceClaimTemplates, `workloads/` the queue- and topology-annotated jobs. "
              "`why-pending` says which podset needs how many pods in one rack and how much "
              "the roomiest rack has. On the live cluster `cluster.json` shows the real "
              "Kueue's verdict per workload (flavor, or the reason it waits), the real "
              "scheduler's node per pod and the GPUs each DRA claim was allocated; the "
              "cluster stays up for exercise 4.",
        pitfalls=("`validate` reports the object, field path and schema rule; `lint` the "
                  "cross-layer mismatch (flavor vs pool, taint vs toleration, quota vs "
                  "capacity) with a fix.",)),
    Exercise(
        number=4, slug="sharing", needs_lab=False,
        title="Resource sharing, quotas and a Kueue queue with fair sharing for several teams",
        goal="Plan MIG layouts for two teams, read the tenant quotas, cohort and weighted "
             "ClusterQueues from exercise 3, and simulate the queues with and without fair "
             "sharing.",
        steps=(
            Step("Plan MIG instances for two teams on the h100 pool",
                 cmd=f"mkdir -p \"$COURSE/ex4\" && aiplat sharing plan "
                     f"\"$COURSE/ex1/platform.yaml\" --pool {POOL} --demand team-a:1g.10gb=10 "
                     "--demand team-b:3g.40gb=2 -o json > \"$COURSE/ex4/sharing.json\""),
            Step("The cohort and ClusterQueues with fair-sharing weights",
                 cmd="cat \"$COURSE/ex3/kube/kueue/cohorts.yaml\" "
                     "\"$COURSE/ex3/kube/kueue/clusterqueues.yaml\""),
            Step("Write a contended platform: two teams (weights 1 and 2) whose nightly "
                 "evaluations want more than the pool, and an idle team that lends its quota",
                 cmd="cat > \"$COURSE/ex4/teams.yaml\" <<'EOF'\n" + TEAMS_SPEC + "EOF"),
            Step("Simulate a month with fair sharing",
                 cmd="aiplat sim run \"$COURSE/ex4/teams.yaml\" -o json > "
                     "\"$COURSE/ex4/sim-fair.json\""),
            Step("... and without (classic Kueue ordering)",
                 cmd="aiplat sim run \"$COURSE/ex4/teams.yaml\" --classic -o json > "
                     "\"$COURSE/ex4/sim-classic.json\""),
            Step("On the live cluster of exercise 3, submit a batch job that needs more than "
                 "the batch team's nominal quota, so it borrows from the cohort",
                 cmd="mkdir -p \"$COURSE/ex4/borrow\" && "
                     "cat > \"$COURSE/ex4/borrow/job.yaml\" <<'EOF'\n"
                     + BORROW_JOB + "EOF\n"
                     f"aiplat kube apply --kubeconfig \"$(aiplat lab cluster kubeconfig --name "
                     f"{CLUSTER})\" \"$COURSE/ex4/borrow\" -o json > \"$COURSE/ex4/borrow.json\""),
            Step("Read Kueue's fair-sharing view: each ClusterQueue's weighted share",
                 cmd=f"aiplat lab cluster status --name {CLUSTER} --settle 60 -o json > "
                     "\"$COURSE/ex4/queues-live.json\""),
        ),
        check=check_sharing,
        cleanup=f"aiplat lab cluster down --name {CLUSTER} >/dev/null 2>&1 || true",
        results=("ex4/sharing.json", "ex4/sim-fair.json", "ex4/sim-classic.json",
                 "ex4/queues-live.json"),
        means="`sharing.json` packs the teams' MIG instances into as few GPUs as the "
              "placement rules allow. In the simulations compare each team's obtained share "
              "with its fair share (from the weights) and its waits: with fair sharing, the "
              "capacity borrowed from the idle team should go 2:1 to team-b. On the live "
              "cluster, `queues-live.json` shows the borrowing job admitted and the batch "
              "queue's weighted share above zero: Kueue's fair sharing is on (the rendered "
              "Configuration) and counts the borrowed quota against the queue's weight.",
        pitfalls=("With `--classic` team-a and team-b get ~50% each; with fair sharing "
                  "team-b's jobs preempt team-a's borrowing ones until the strategies stop "
                  "them: the nominal 8 GPUs each stay each team's and only the 16 borrowed "
                  "split 2:1, so 13.3 and 18.7 of the 32 GPUs (~42% / 58%); the plan's "
                  "one-GPU replicas come close (about 40% / 60%). The check demands team-b "
                  "get over 1.3× team-a's share.",
                  "`sharing plan` refuses a profile the GPU model has no MIG profile for; "
                  "`sim` reports jobs that never fit any node.")),
    Exercise(
        number=5, slug="artifacts", needs_lab=True,
        title="Model artifacts through a central store, measuring a local cache",
        goal="Push a small model to the lab's model store and pull it cold and warm on lab "
             "node-1; measure cold, warm and load.",
        steps=(
            Step("Make a small model: 16 MiB of safetensors weights and a config",
                 cmd="mkdir -p \"$COURSE/ex5/model\" && python -c 'import json, os, struct, sys; "
                     "n = 16 << 20; h = json.dumps({\"w\": {\"dtype\": \"F32\", "
                     "\"shape\": [n // 4], \"data_offsets\": [0, n]}}).encode(); "
                     "h += b\" \" * (-len(h) % 8); open(sys.argv[1], \"wb\").write("
                     "struct.pack(\"<Q\", len(h)) + h + os.urandom(n))' "
                     "\"$COURSE/ex5/model/model.safetensors\" && echo '{\"arch\": \"mini\"}' > "
                     "\"$COURSE/ex5/model/config.json\""),
            Step("Note the lab's addresses: its model store is where the model goes",
                 cmd=f"aiplat lab status {LAB_OPT} -o json > \"$COURSE/ex5/lab.json\""),
            Step("Push it to the store from node-1",
                 cmd=f"ip netns exec \"{NODE_NS}\" aiplat model push \"$COURSE/ex5/model\" "
                     f"\"{MODEL_REF}\" --plain-http"),
            Step("Cold pull into an empty cache",
                 cmd=f"rm -rf \"$COURSE/ex5/cache\" && {AIPLAT_PULL} --cache \"$COURSE/ex5/cache\" "
                     "-o json > \"$COURSE/ex5/pull-cold.json\""),
            Step("Warm pull",
                 cmd=f"{AIPLAT_PULL} --cache \"$COURSE/ex5/cache\" -o json > "
                     "\"$COURSE/ex5/pull-warm.json\""),
            Step("Cold, warm and load against same-run ceilings",
                 cmd=f"ip netns exec \"{NODE_NS}\" aiplat model bench \"{MODEL_REF}\" --plain-http "
                     "--no-oras --rounds 1 -o json > \"$COURSE/ex5/bench.json\""),
        ),
        check=check_artifacts,
        results=("ex5/lab.json", "ex5/pull-cold.json", "ex5/pull-warm.json", "ex5/bench.json"),
        means="The cold pull downloads every blob; the warm pull hard-links a snapshot and "
              "downloads nothing. `bench` sets both against the ceilings measured in the "
              "same run.",
        pitfalls=("A pull from a store that is down fails with the registry URL and the "
                  "connection error; a corrupt blob is quarantined by `aiplat model verify`.",)),
    Exercise(
        number=6, slug="diagnose", needs_lab=True,
        title="Create a storage or network bottleneck, correlate metrics, localise the cause",
        goal="Cap the store's storage port, see the slow pull, let `aiplat diagnose` name the "
             "cause with evidence, clear the fault and confirm recovery.",
        steps=(
            Step("Inject the fault",
                 cmd=f"mkdir -p \"$COURSE/ex6\" && aiplat lab fault add slow-storage {LAB_OPT}"),
            Step("Reproduce the symptom: a slow cold pull",
                 cmd=f"rm -rf \"$COURSE/ex6/cache\" && {AIPLAT_PULL} --cache \"$COURSE/ex6/cache\" "
                     "-o json > \"$COURSE/ex6/pull-slow.json\""),
            Step("Diagnose (exit 1: a cause was found)",
                 cmd=f"aiplat diagnose {LAB_OPT} -o json > \"$COURSE/ex6/diagnose-fault.json\"",
                 ok_rc=(0, 1)),
            Step("Clear the fault", cmd=f"aiplat lab fault clear --all {LAB_OPT}"),
            Step("Confirm recovery",
                 cmd=f"aiplat diagnose {LAB_OPT} -o json > \"$COURSE/ex6/diagnose-clear.json\""),
        ),
        check=check_diagnosis, cleanup=f"aiplat lab fault clear --all {LAB_OPT}",
        results=("ex6/pull-slow.json", "ex6/diagnose-fault.json", "ex6/diagnose-clear.json"),
        means="`diagnose` ranks causes by score: the first names the fault kind, node and "
              "segment, with evidence such as the storage receive rate flat near the cap.",
        pitfalls=("Without a lab, `diagnose` reads interface counters for `--since`; with a "
                  "lab it compares pulls with the baseline measured at `lab up`.",)),
    Exercise(
        number=7, slug="accept", needs_lab=True,
        title="Operational acceptance with version matrix, baseline and repeat test",
        goal="Check the version matrix, accept the node against it with repeatability "
             "statistics and a report, then introduce a regression (node-1's management "
             "link capped) and show that the repeat test catches it.",
        steps=(
            Step("Write an acceptance spec for this host (its CPUs, memory, kernel)",
                 action="spec"),
            Step("Check the version matrix against the compatibility facts",
                 cmd="aiplat matrix check \"$COURSE/ex7/lab.yaml\" -o json > "
                     "\"$COURSE/ex7/matrix.json\""),
            Step("Accept the node: function, isolation, performance, repeatability",
                 action="accept"),
            Step("Introduce a regression: cap node-1's management port at 100 Mbit/s",
                 cmd="aiplat lab fault add rate --node node-1 --segment management "
                     f"--value 100 {LAB_OPT}"),
            Step("Repeat the performance and repeatability suites against the baseline",
                 action="repeat"),
            Step("Clear the fault", cmd=f"aiplat lab fault clear --all {LAB_OPT}"),
            Step("Compare the two records (exit 1: a criterion newly fails)",
                 cmd=f"aiplat accept compare \"$COURSE/{ACCEPT_CLEAN}\" "
                     f"\"$COURSE/{ACCEPT_REGRESSED}\" "
                     "-o json > \"$COURSE/ex7/compare.json\"", ok_rc=(0, 1)),
        ),
        check=check_acceptance, cleanup=f"aiplat lab fault clear --all {LAB_OPT}",
        results=("ex7/matrix.json", ACCEPT_CLEAN, "ex7/baseline/acceptance.html",
                 ACCEPT_REGRESSED, "ex7/compare.json"),
        means="The acceptance record lists every criterion with expected and observed "
              "values, the matched matrix entry and the environment fingerprint; the repeat "
              "run flags a metric whose drop is both significant (one-sided Mann-Whitney U) "
              "and beyond the tolerance.",
        pitfalls=("Repeatability thresholds are relaxed here: a 50% CV for pulls and "
                  "network, more for the short node probes (matmul's first run warms BLAS up), "
                  "which vary 20-40% on a shared 2-core VM.",
                  "`matrix check` exits 1 and names the violated fact (e.g. a driver too old "
                  "for the CUDA version) before any node is touched.",
                  "The network probe runs iperf3 from node-1 to the store over the "
                  "management segment, so the lab's faults reach it.")),
)


def exercise(number: int) -> Exercise:
    for ex in EXERCISES:
        if ex.number == number:
            return ex
    raise KeyError(number)


def commands(ex: Exercise) -> Sequence[str]:
    return [ex.command(s) for s in ex.steps]
