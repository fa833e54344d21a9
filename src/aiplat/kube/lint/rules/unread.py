"""What lint says of an object no rule reads: a custom group's kind that has the name of a
kind the rules read (Volcano's ``batch.volcano.sh`` Job and CronJob are not batch/v1's,
and Kueue does not manage them as Jobs). The rules go by kind, so
such an object is kept out of the tree they read and one info line per object says it was
not checked, never a finding written for another group's kind.
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, finding, rule
from aiplat.kube.objects import ref


@rule("unread-kind", "says which objects no rule reads (another group's kind of the same "
      "name)", severities=("info",))
def unread_kind(ctx: Context) -> list[Finding]:
    return [finding("info", "unread-kind", ref(o),
                    f"{o.get('apiVersion')} {o.get('kind')} not checked (unknown): lint's "
                    f"rules read {o.get('kind')} of {', '.join(g or 'core' for g in homes)}, "
                    "not of this group",
                    "check it with its operator's tools; `aiplat kube validate --crd-dir` "
                    "checks its fields against the operator's CRD")
            for _f, o, homes in ctx.unread]
