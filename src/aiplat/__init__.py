"""aiplat: the administrator's toolkit for AI platforms.

One declarative platform spec (``aiplat.spec``) drives sizing (``aiplat.sizing``), the plan
(``aiplat.plan``) and its reports (``aiplat.report``); ``aiplat.cli`` is a thin shell over them.
"""

__version__ = "0.1.0"
