"""Stage 1, spec: YAML documents in, compiled Evaluation / Policy / Suite out.

The located YAML reader (``yaml``), JSON Schema checks with coded problems (``schema``),
parameter compilers (``compile``), the Policy and Evaluation models (``policy``,
``evaluation``), the template sandbox (``templates``), ``engine diff`` (``diff``) and the
generated reference (``reference``).
"""
