"""The lab course: seven exercises as data, run and checked by ``aiplat lab exercise``.

Design (and why):

- :mod:`aiplat.course.exercises` is pure data plus pure check functions. Each exercise lists
  its steps — shell lines calling ``aiplat`` exactly as a participant types them, or a named
  action for what has no command yet — and a check that reads the result *files* the steps
  leave under ``$COURSE`` (an instructor verifies a participant's state on disk; nothing is
  re-run). Checks take a :class:`~aiplat.course.exercises.Files` reader, so unit tests feed
  them dictionaries and show they fail on a missing or wrong result.
- :mod:`aiplat.course.guide` renders ``docs/lab-guide.md`` from the same data, so the guide's
  commands are, by construction, the ones ``aiplat lab exercise`` and the end-to-end test run
  (a unit test fails when the committed guide is stale).
- :mod:`aiplat.course.runner` is the I/O edge: it runs the shell lines with ``bash``, calls
  the actions, and reads the files for the checks. :mod:`aiplat.course.actions` holds the
  actions (exercise 7 calls the acceptance API in-process until ``aiplat accept`` is
  registered as a command).
"""
