"""Kueue v0.19's semantics, once, shaped like Kueue's own code (``pkg/cache/scheduler``,
``pkg/scheduler``): what Kueue would decide on a cluster's objects.

Below ``kube`` and ``sched``, which both use it: ``sim replay`` and ``kube why-pending``
run the cycle on a cluster snapshot, ``sim run`` runs it with simulated time added
(``aiplat.sched.admission``), as a client: through the cycle's declared extension points,
``Queues`` (the queue manager) and ``World`` (time, placement, evictions), never by
overriding it. Each layer imports only those below it (a contract):

    unknown    what the replay cannot decide: "unknown (feature)" for the workloads a
               ``Gap`` concerns and those whose outcome depends on them (``decide``)
    cycle      the scheduling cycle (heads, nominate, order, process, requeue) until quiet;
               applies the decisions below, nothing else (``Replay``; ``KueueQueues``)
    assign     the flavor assigner: per pod set and resource group, flavors in order;
               partial admission's search over reduced counts (``reduced_counts``)
    preempt    the preemption target search (classic and fair sharing)
    fairshare  dominant resource share and the head tournament down the cohort tree
    quota      the cohort tree with usage: available, potential, borrowing, lending
    snapshot   ``kubectl get -o yaml`` objects -> Snapshot, in Kueue's integer units
    labels     label selectors: namespaceSelector, a flavor's node affinity
    podrequests  what one pod requests (Kubernetes' PodRequests): init containers, sidecars,
               pod-level resources, overhead

    scenarios  seeded scenarios for the differential test against the real Kueue

Pure: no I/O, no text parsing (a caller's YAML reader is passed in where a ConfigMap embeds
Kueue's Configuration).
"""
