"""Chapters' exercise and quiz declarations, apart from their demonstrations (chapters 05-07).

`course_lib/declared/chNN_topic.py` holds what the judge and the grader need of a chapter declared
with `apart=True` in course_lib/chapters.py: its exercises (prompt, visible tests, hints, points)
and quizzes. The chapter module re-exports them for its notebook (`ch.<name>`).
"""
