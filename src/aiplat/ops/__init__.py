"""Operations and handover: minimum monitoring (:mod:`aiplat.ops.monitoring`) and the runbook
with its procedures (:mod:`aiplat.ops.runbook`), both built as data from the platform spec and
rendered only at the edge (YAML for Prometheus, Markdown and HTML through ``aiplat.report``)."""
