"""What lint says of objects no rule reads:
- a custom group's kind that has the name of a kind the rules read (Volcano's
  ``batch.volcano.sh`` Job and CronJob are not batch/v1's, and Kueue does not manage them as
  Jobs): the rules go by kind, so such an object is kept out of the tree they read, and one
  info line per object says it was not checked, never a finding written for another group's
  kind;
- a custom resource aiplat has no schema for that is queued to Kueue (the
  ``kueue.x-k8s.io/queue-name`` label on a RayJob, TrainJob, MPIJob...): Kueue admits it
  through its integration, but lint's workload rules (its queue, quota, shape) know the pods
  of Jobs, JobSets, LeaderWorkerSets and built-in workloads only, so it is said not checked
  rather than passed in silence.
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, finding, rule
from aiplat.kube.lint.objects import QUEUE_LABEL
from aiplat.kube.objects import ref
from aiplat.kube.shape import schema_known


@rule("unread-kind", "says which objects no rule reads (another group's kind of the same "
      "name; a custom resource queued to Kueue)", severities=("info",))
def unread_kind(ctx: Context) -> list[Finding]:
    out = [finding("info", "unread-kind", ref(o),
                   f"{o.get('apiVersion')} {o.get('kind')} not checked (unknown): lint's "
                   f"rules read {o.get('kind')} of {', '.join(g or 'core' for g in homes)}, "
                   "not of this group",
                   "check it with its operator's tools; `aiplat kube validate --crd-dir` "
                   "checks its fields against the operator's CRD")
           for _f, o, homes in ctx.unread]
    for o in ctx.objects:
        queue = ((o.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
        if queue is not None and not schema_known(o):
            out.append(finding(
                "info", "unread-kind", ref(o),
                f"{o.get('apiVersion')} {o.get('kind')} queued to Kueue (LocalQueue "
                f"{queue!r}) not checked (unknown): lint's workload rules (queue, quota, "
                "shape) do not know the pods its operator makes",
                "`aiplat kube why-pending` on its Workload once it is submitted (Kueue "
                "creates one when the integration is enabled)"))
    return out
