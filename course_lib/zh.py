"""Import this module to turn the course's messages Chinese: ``import course_lib.zh``."""
from .i18n import use_language

use_language("zh")
