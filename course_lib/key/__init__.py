"""The answer key: reference solutions, hidden tests, wrong answers. Not in the student bundle."""
