"""中文版: ``import course_lib.zh  # noqa: F401`` switches everything the course says to Chinese."""

from .i18n import use_language

use_language("zh")
