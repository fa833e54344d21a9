"""A real Kubernetes control plane for the lab: upstream etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, Kueue, JobSet and kwok, built from their Go modules
and run as local processes on 127.0.0.1, with fake GPU nodes (kwok) whose ResourceSlices are
what the NVIDIA DRA driver publishes.

- ``assets``: pinned versions (``tools/go.mod``), build into the user cache, locate;
- ``pki``: certificates for one run;
- ``config`` (pure): each component's flags, Kueue's Configuration, webhook configurations
  pointed at 127.0.0.1, kubeconfig;
- ``nodes`` (pure): kwok Nodes and ResourceSlices from the platform's pools;
- ``run``: ``up``/``status``/``down`` with a state file, so ``down`` stops exactly what ``up``
  started, also after a crash.
"""
