"""The course's checks: each test of a function exercise as a run half and a judge half.

A check is a small dataclass (base.py) built by a public builder with plain parameters:
`run(candidate)` calls the learner's function on the test's inputs and returns what it saw as
plain data (exercises/wire.py: numbers, strings, tensors by value, exceptions as type and message);
`reference(solution)` computes, with trusted code only, what the judge compares against;
`judge(seen, ref)` turns the two into a pass or a `Fail(expected, got, hint)`. The learner's
`check()` runs both halves in one process; the grader runs `run` in an isolated child that
holds no secret and `judge` in a process that never ran student code. Chapters and answer keys
both build their tests from these modules:

- base.py         Check, the builder registry, helpers shared by every check
- rig.py          the probed training rig (chapters 03, 05, 06) and its shared checks
- devices.py      chapter 01: machine simulator, choose_device, gpu_names, make_batch
- batches.py      chapter 02: move_to, where_is
- loops.py        chapter 03: train_one_epoch, evaluate
- checkpoints.py  chapter 04: add_positions, strip_module_prefix, load_for_inference
- amp.py          chapter 05: amp_train_step (autocast, GradScaler, their spies)
- timing.py       chapter 05: time_it (a simulated GPU clock)
- profiles.py     chapter 05: phase_ms (a real profile's phases)
- memory.py       chapter 06: model_state_bytes, train_with_accumulation, largest_batch
- distributed.py  chapter 07: shard_indices, average_gradients
- sharding.py     chapter 08: rank_bytes
"""
