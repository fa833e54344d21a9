"""The plan: the spec sized into pools, facility, roles and a deployment model (pure)."""

from aiplat.plan.build import build_plan
from aiplat.plan.models import PLAN_SCHEMA, Finding, Plan

__all__ = ["PLAN_SCHEMA", "Finding", "Plan", "build_plan"]
