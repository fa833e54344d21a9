"""``serving/``: the inference gateway the way Gateway API's inference extension runs it.

- A GatewayClass for the Gateway (its controller is the spec's ``kubernetes.gatewayController``,
  Envoy Gateway by default): without it the Gateway is never programmed.
- Per serving workload (online inference, RAG) an InferencePool over its vLLM pods, the
  HTTPRoute, and the pool's endpoint picker, which the pool's ``endpointPickerRef`` names: the
  lightweight EPP of gateway-api-inference-extension v1.6 (``cmd/lwepp``; flags in
  pkg/lwepp/server/options.go: ``--pool-name``, ``--pool-namespace``, ext-proc gRPC on 9002,
  gRPC health on 9003 with the service ``inference-extension``, metrics on 9090). It watches its
  InferencePool and the pods (pkg/lwepp/controller), so a Role for exactly those, a
  ServiceAccount, a Service on the ports the pool and Prometheus use, and two NetworkPolicies in
  the tenant's default-deny namespace: the gateway may reach it, and it may reach the API server
  (the management segment's CIDR when the spec gives one: the API server is not a pod a selector
  can name).
"""

from __future__ import annotations

from aiplat.kube.objects import Obj, obj, restricted_security_context
from aiplat.spec.models import Platform, SegmentPurpose, WorkloadSpec

EPP_IMAGE = "registry.k8s.io/gateway-api-inference-extension/lwepp:v1.6.0"
EPP_GRPC, EPP_HEALTH, EPP_METRICS = 9002, 9003, 9090
INFERENCE_API = "inference.networking.k8s.io"
GATEWAY_CLASS = "aiplat"
EPP_LABEL = "aiplat.io/component"
EPP_RESOURCES = {"cpu": "1", "memory": "1Gi"}


def epp_name(w: WorkloadSpec) -> str:
    return f"{w.name}-epp"


def gateway_class(platform: Platform) -> Obj:
    return obj("gateway.networking.k8s.io/v1", "GatewayClass", GATEWAY_CLASS,
               spec={"controllerName": platform.kubernetes.gateway_controller})


def endpoint_picker(platform: Platform, w: WorkloadSpec) -> list[Obj]:
    """ServiceAccount, Role, RoleBinding, Deployment, Service and NetworkPolicies of the
    InferencePool ``w.name``'s endpoint picker, in the workload's tenant namespace."""
    name, ns = epp_name(w), w.tenant
    labels = {"app.kubernetes.io/name": name, EPP_LABEL: "endpoint-picker",
              "aiplat.io/serving": "true"}  # the gateway's ingress policy admits serving pods
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": [INFERENCE_API], "resources": ["inferencepools"],
              "verbs": ["get", "list", "watch"]}]
    probe = {"grpc": {"port": EPP_HEALTH, "service": "inference-extension"}}
    container = {
        "name": "epp", "image": EPP_IMAGE,
        "args": ["--pool-name", w.name, "--pool-namespace", ns,
                 "--grpc-port", str(EPP_GRPC), "--grpc-health-port", str(EPP_HEALTH),
                 "--metrics-port", str(EPP_METRICS)],
        "ports": [{"name": "grpc", "containerPort": EPP_GRPC},
                  {"name": "grpc-health", "containerPort": EPP_HEALTH},
                  {"name": "metrics", "containerPort": EPP_METRICS}],
        "readinessProbe": {**probe, "periodSeconds": 2},
        "livenessProbe": {**probe, "periodSeconds": 10, "initialDelaySeconds": 5},
        "resources": {"requests": dict(EPP_RESOURCES), "limits": dict(EPP_RESOURCES)},
        "securityContext": {**restricted_security_context(), "runAsUser": 65532},
    }
    deployment = obj("apps/v1", "Deployment", name, ns, labels=labels, spec={
        "replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "template": {"metadata": {"labels": labels}, "spec": {
            "serviceAccountName": name, "terminationGracePeriodSeconds": 130,
            "containers": [container]}}})
    service = obj("v1", "Service", name, ns, labels=labels, spec={
        "selector": {"app.kubernetes.io/name": name},
        "ports": [{"name": "grpc-ext-proc", "port": EPP_GRPC, "protocol": "TCP",
                   "appProtocol": "http2"},
                  {"name": "http-metrics", "port": EPP_METRICS, "protocol": "TCP"}]})
    return [
        obj("v1", "ServiceAccount", name, ns),
        obj("rbac.authorization.k8s.io/v1", "Role", name, ns, rules=rules),
        obj("rbac.authorization.k8s.io/v1", "RoleBinding", name, ns,
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            subjects=[{"kind": "ServiceAccount", "name": name, "namespace": ns}]),
        deployment, service, _api_egress(platform, name, ns),
    ]


def _api_egress(platform: Platform, name: str, ns: str) -> Obj:
    mgmt = [str(s.cidr) for s in platform.network.segments
            if s.purpose is SegmentPurpose.MANAGEMENT and s.cidr is not None]
    to = [{"ipBlock": {"cidr": c}} for c in mgmt] or [{"ipBlock": {"cidr": "0.0.0.0/0"}}]
    return obj("networking.k8s.io/v1", "NetworkPolicy", f"{name}-apiserver", ns, spec={
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "policyTypes": ["Egress"],
        "egress": [{"to": to, "ports": [{"protocol": "TCP", "port": 6443},
                                        {"protocol": "TCP", "port": 443}]}]})


def endpoint_pickers(platform: Platform) -> list[Obj]:
    return [o for w in platform.workloads if w.kind.serves
            for o in endpoint_picker(platform, w)]
