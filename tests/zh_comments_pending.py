# ruff: noqa: E501
"""English comments still in the Chinese code cells (issue 36), one line each, by chapter.

TEMPORARY: `test_no_english_comment_is_left_in_chinese_code_cells` lets these (and only these)
stay while chapters are translated; translate a comment in notebooks/zh/, then delete its line
here (the test fails on a line whose comment is gone). Empty means done."""

PENDING = {
    "05_speedups": [
        "c01: # a cell that fails with an error the course knows gets a panel that explains it",
        "c05: # YOUR CODE HERE",
        "c15p4: # the file, parsed once",
        "c15e2: # YOUR CODE HERE",
        "c15q3: # your letter",
        "c33: # bfloat16, or float16 on a CUDA GPU without it",
        "c36: # your letter",
        "c39: # a number",
        "c43: # YOUR CODE HERE",
        "c49: # x: the batch of digits from section 5",
        "c51: # set to True to measure torch.compile (the first call takes tens of seconds)",
        "c52b: # your letter",
    ],
    "06_out_of_memory": [
        "c01: # a cell that fails with an error the course knows gets a panel that explains it",
        "c12: # YOUR CODE HERE",
        "c17: # a number of bytes",
        "c19e: # your letter",
        "c21: # a model after a first small step, so that Adam's state exists (as in the middle of training)",
        "c25: # YOUR CODE HERE",
        "c35: # your letter",
        "c37: # YOUR CODE HERE",
        "c39c: # your letter",
        "c48: # your letter",
    ],
    "07_dp_vs_ddp": [
        "c01: # a cell that fails with an error the course knows gets a panel that explains it",
        "c09: # runs the line above",
        "c17: # True: launch once more with rank 1 raising on purpose",
        "c18c: # a number",
        "c24b: # training mode: normalises with the batch's own statistics",
        "c24b: # one device, all 8 samples: the rows rank 0 would get",
        "c24b: # rank 0 of 2 under DDP: only its 4 samples",
        "c25: # rounded up: the last, smaller batch is a step too",
        "c29: # YOUR CODE HERE",
        "c32: # YOUR CODE HERE",
        "c35: # a number",
        "c38: # your letter",
        "c41: # your letter",
        "c44: # your letter",
        "c45: # your letter",
    ],
    "08_sharding": [
        "c01: # a cell that fails with an error the course knows gets a panel that explains it",
        "c03: # section 2's run: a free port and an output folder, fixed from here on",
        "c03: # torchrun starts now; section 2 waits for it",
        "c10: # launch_torchrun(config) would start and wait in one call",
        "c23: # YOUR CODE HERE",
        "c31: # a number of GB",
    ],
}
