"""The platform spec: models (pure), catalog reference checks (pure) and the YAML loader."""

from aiplat.spec.load import EXAMPLE, example_text, load_platform, parse_platform
from aiplat.spec.models import API_VERSION, Platform

__all__ = ["API_VERSION", "EXAMPLE", "Platform", "example_text", "load_platform", "parse_platform"]
