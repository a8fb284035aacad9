"""The translators' tools, outside the course's runtime package (authors, tests and CI).

`python -m course_tools.messages --missing` collects every message course_lib says, by running
what exists, and lists those without a Chinese entry; `python -m course_tools.leftovers
notebooks/zh/NN_x.ipynb` runs Chinese notebooks and lists the English left in their outputs.
They import the whole course (chapters, engine, grader) to do so, which is why they live here and
not in `course_lib.i18n`: the runtime catalogue imports nothing above it, and the student bundle
(`release`) leaves these tools out.
"""
