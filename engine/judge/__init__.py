"""Judges: rubrics, HTTP transport, the content-addressed cache, replay, mock and panels."""

from engine.judge._rubrics import Rubric, RubricError, load_rubric
from engine.judge._runtime import (
           DEFAULT_KEYS,
           DEFAULT_URLS,
           PROVIDERS,
           JudgeConfig,
           Runtime,
           combine,
)

__all__ = ["DEFAULT_KEYS", "DEFAULT_URLS", "PROVIDERS", "JudgeConfig", "Rubric", "RubricError",
           "Runtime", "combine", "load_rubric"]
