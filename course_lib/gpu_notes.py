"""What each GPU-only cell shows on a CUDA GPU, and why, for a learner without one (all chapters).

A skipped cell must still teach: `device.gpu_only(..., figure=KEY)` prints the note for KEY
under its skip line, then the figures a real GPU recorded (docs/gpu/figures.json), if any. The
notes say what a GPU prints and why, from PyTorch's own documentation and sources, and say so;
they hold no measured numbers (only sizes fixed by the cell's own code). Measured figures come
only from a recorded run.
"""

from .i18n import tr
from .i18n.catalogue import CJK, Said, labelled

SOURCE = "from PyTorch's documentation and sources, not measured on this machine"

# figure key -> (what a CUDA GPU shows in this cell, why, where PyTorch says so)
NOTES = {
    "ch01.device_memory": (
        "'after the label: +0 bytes', then 'after the tensor: +4194304 bytes'.",
        (
            "a torch.device is only a name and allocates nothing; memory_allocated counts the "
            "bytes of live tensors, and this one holds 1024 x 1024 float32 numbers of 4 bytes "
            "(the caching allocator rounds each request up to a multiple of 512 bytes, which this "
            "size already is)."
        ),
        "the 'CUDA semantics' notes, Memory management; c10/cuda/CUDACachingAllocator.cpp",
    ),
    "ch01.create_on_device": (
        "the 'CPU then copy' line is the slower of the two.",
        (
            "torch.randn(4096, 4096) first fills 64 MiB on the CPU, and .to(device) then copies "
            "them over the bus to the GPU; with device= a GPU kernel fills them in GPU memory and "
            "nothing is copied. How much slower depends on the CPU, the bus and the GPU."
        ),
        "the 'CUDA semantics' notes; the torch.randn documentation (device=)",
    ),
    "ch05.sync_timing": (
        "the Python line returns long before the GPU has finished the matrix product.",
        (
            "'By default, GPU operations are asynchronous': a call queues the kernel and returns; "
            "torch.cuda.synchronize() waits until the queue is empty, so only a clock read after "
            "it times the work."
        ),
        "the 'CUDA semantics' notes, Asynchronous execution",
    ),
    "ch05.data_wait": (
        (
            "for the augmented digits, the same kind of waiting as here, next to a compute part "
            "that now runs on the GPU."
        ),
        (
            "forward, backward and the update run as GPU kernels, while the DataLoader still "
            "builds every batch on the CPU: a faster device does not shorten the wait, so the "
            "slower the data pipeline, the larger its share of each step."
        ),
        "the torch.utils.data documentation (batches are prepared by the loader, in CPU processes)",
    ),
    "ch05.pinned_copy": (
        (
            "more GB/s from pinned than from pageable memory; with non_blocking=True from pinned "
            "memory, Python gets control back before the copy has finished, from pageable memory "
            "only after it."
        ),
        (
            "'Host to GPU copies are much faster when they originate from pinned (page-locked) "
            "memory', and once a tensor is pinned, copies with non_blocking=True are asynchronous "
            "with respect to the host."
        ),
        "the 'CUDA semantics' notes, Use pinned memory buffers",
    ),
    "ch05.amp": (
        (
            "on a GPU with Tensor Cores, the autocast rows of this wide model are faster than "
            "float32; a GPU without bfloat16 in hardware (a T4, sm_75) has no bfloat16 row, only "
            "float16 + GradScaler."
        ),
        (
            "its matrix products, which dominate the step, run in float16 or bfloat16 on the "
            "Tensor Cores (float16 since Volta, bfloat16 since Ampere); how much faster depends "
            "on the GPU and the model."
        ),
        "the torch.amp documentation; NVIDIA's mixed-precision training guide",
    ),
    "ch05.compile": (
        "a first call of seconds, then the step times of eager and compiled code side by side.",
        (
            "the first call traces forward (TorchDynamo) and generates and compiles Triton "
            "kernels (Inductor); later calls run the compiled kernels. Whether they beat eager "
            "depends on the model."
        ),
        "the torch.compile documentation",
    ),
    "ch05.nvidia_smi": (
        (
            "one line per GPU: index, name, utilization.gpu [%], memory.used [MiB], memory.total "
            "[MiB]."
        ),
        (
            "utilization is the share of the last sample period during which at least one kernel "
            "ran on the GPU: busy, not necessarily fully used."
        ),
        "nvidia-smi's own documentation (nvidia-smi --help-query-gpu)",
    ),
    "ch05.benchmark": (
        (
            "the same Compare table, with the GPU's medians: float32 and bfloat16 matrix products "
            "of each size."
        ),
        (
            "on a GPU every clock reading of the Timer first waits for the GPU "
            "(torch.accelerator.synchronize), so the medians hold the kernels' time, not their "
            "launch; small products are dominated by the launch itself, so sizes 64 and 256 "
            "differ less than their number of operations."
        ),
        "the torch.utils.benchmark documentation; torch/utils/benchmark/utils/timer.py",
    ),
    "ch05.profiler_cuda": (
        (
            "the table gains CUDA columns (Self CUDA, CUDA total) and is sorted by "
            "self_device_time_total; the timeline gains a lane of GPU kernels, with gaps where "
            "the GPU waits for the next batch."
        ),
        (
            "with ProfilerActivity.CUDA the profiler (Kineto, through CUPTI) records every kernel "
            "with its start and duration on the GPU; the data phase launches no kernel, so the "
            "GPU lane is empty while it lasts."
        ),
        "the torch.profiler documentation; the PyTorch Profiler recipe",
    ),
    "ch05.item_sync": (
        "the loop that calls .item() every step is the slower one.",
        (
            "each .item() copies one number to the CPU and so waits until every kernel queued "
            "before it has finished: the CPU cannot queue the next step while the GPU computes "
            "this one. Summed on the device, the loop queues all its steps and waits once."
        ),
        (
            "the 'CUDA semantics' notes, Asynchronous execution; the performance tuning guide "
            "(avoid unnecessary CPU-GPU synchronization)"
        ),
    ),
    "ch05.nonblocking_d2h": (
        (
            "in the rounds where the copy was still queued behind the matrix product, the values "
            "read at once are wrong (old contents of the pinned buffer); after "
            "event.synchronize() none is."
        ),
        (
            "a device-to-host copy with non_blocking=True goes into pinned host memory and is "
            "queued like a kernel: the call returns before the bytes arrive. An event recorded "
            "after the copy, then synchronized, makes the CPU wait exactly until the GPU has "
            "passed it."
        ),
        (
            "the 'A guide on good usage of non_blocking and pin_memory() in PyTorch' tutorial; "
            "the torch.cuda.Event documentation"
        ),
    ),
    "ch05.sync_debug": (
        (
            "one warning per step at the .item() line and one at the boolean-mask line: 'called a "
            "synchronizing CUDA operation'."
        ),
        (
            "set_sync_debug_mode('warn') makes PyTorch warn at the CUDA calls it watches that make "
            "the CPU wait for the GPU: .item() copies a number to the host, and x[mask] must learn "
            "how many rows the mask keeps before it can allocate its result. It does not watch "
            "every such call (its documentation: operations in torch.distributed and torch.sparse "
            "are not covered yet), so no warning does not prove there is no sync point."
        ),
        "the torch.cuda.set_sync_debug_mode documentation",
    ),
    "ch06.estimate_vs_peak": (
        (
            "a peak of memory_allocated above the course's count of weights, grads, Adam's state, "
            "activations and the batch."
        ),
        (
            "the peak also holds what the count does not see: temporaries of the step, such as "
            "the gradients of the activations during backward; and the caching allocator rounds "
            "each block up."
        ),
        "the torch.cuda.max_memory_allocated documentation; c10/cuda/CUDACachingAllocator.cpp",
    ),
    "ch06.real_oom": (
        (
            "'PyTorch raised, as expected: OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate ... GPU 0 has a total capacity of ... of which ... is free. ... allowed; Of "
            "the allocated memory ... is allocated by PyTorch, and ... is reserved by PyTorch but "
            "unallocated. ...' (the numbers are your GPU's)."
        ),
        (
            "set_per_process_memory_fraction caps what the caching allocator may take (hence "
            "'allowed'); a request beyond the cap raises the real torch.OutOfMemoryError, with "
            "the allocator's own diagnosis in the message. The next cells read a message of "
            "exactly this format."
        ),
        (
            "the torch.cuda.set_per_process_memory_fraction documentation; "
            "c10/cuda/CUDACachingAllocator.cpp"
        ),
    ),
    "ch06.empty_cache": (
        (
            "four rows. After the 256 MiB tensor, allocated is 256 MiB higher (and reserved, "
            "which always covers it, is too); after del, allocated drops back but reserved does "
            "not; only empty_cache() brings reserved down."
        ),
        (
            "PyTorch's caching allocator keeps freed blocks to reuse them, so they still look "
            "used in nvidia-smi; empty_cache() releases 'all unoccupied cached memory currently "
            "held by the caching allocator so that those can be used in other GPU application', "
            "and it 'doesn't increase the amount of GPU memory available for PyTorch'."
        ),
        "the torch.cuda.empty_cache documentation; the 'CUDA semantics' notes, Memory management",
    ),
    "ch06.amp_memory": (
        "a lower peak for the autocast step than for the float32 step, and far from half of it.",
        (
            "weights, gradients and Adam's state stay float32 under autocast; only the tensors "
            "its 16-bit matrix products save and create shrink, as the CPU measurement above "
            "showed part by part."
        ),
        "the torch.amp documentation (autocast casts per operation, not the model)",
    ),
    "ch06.memory_snapshot": (
        (
            "the snapshot's 'oom' event with the size that was asked for and what CUDA still had "
            "free, the segments the allocator held at that moment with their active and free "
            "blocks, and the path of an HTML page."
        ),
        (
            "_record_memory_history makes the allocator keep every allocation and free with its "
            "Python stack, and an 'oom' entry when it raises; _dump_snapshot pickles that history "
            "with every segment's blocks; torch.cuda._memory_viz.trace_plot turns it into a page "
            "that draws memory over time, each allocation with the stack that made it."
        ),
        "the 'Understanding CUDA Memory Usage' notes; the torch.cuda.memory._snapshot docstring",
    ),
    "ch06.fragmentation": (
        (
            "without expandable segments, reserved grows by more than allocated, and inactive "
            "split counts the difference: the free rest of the first, larger block; with "
            "expandable_segments:True reserved grows about as much as allocated, and inactive "
            "split stays near zero."
        ),
        (
            "the caching allocator carves a smaller request out of a larger cached block and "
            "keeps the rest as an inactive split, which cannot be handed back or joined to "
            "another segment while part of its block is in use; an expandable segment instead "
            "grows by mapping more memory at its end, so the free tail and the new pages serve "
            "the next request together."
        ),
        "the 'CUDA semantics' notes, Optimizing memory usage with PYTORCH_ALLOC_CONF; "
        "c10/cuda/CUDACachingAllocator.cpp",
    ),
    "ch07.data_parallel": (
        (
            "on 2 or more GPUs, one line per phase: the batch of 64 cut into one chunk per GPU (32 "
            "rows each on 2), a full copy of the weights on every GPU, each replica's output on "
            "its GPU, all gathered back on cuda:0."
        ),
        (
            "DataParallel.forward does exactly these four steps at every call, from one Python "
            "process: scatter, replicate, parallel_apply, gather; the loss and the optimizer step "
            "then run on cuda:0 alone."
        ),
        "the nn.DataParallel documentation, which recommends DistributedDataParallel instead",
    ),
}


def note_lines(key: str) -> list:
    """The lines a skipped GPU-only cell prints for
    `key`: what a CUDA GPU shows, why, the source."""
    if key not in NOTES:
        return []
    shows, why, where = NOTES[key]  # each label and its text translated apart (course_lib.i18n)
    where = tr(where)
    return [
        Said(f"  {labelled(f'On a CUDA GPU ({SOURCE}):', shows)}"),
        Said(f"    {labelled('Why:', why)}"),
        Said(f"    {labelled('Source:', where)}{'。' if CJK.search(where) else '.'}"),
    ]


__all__ = ["NOTES", "note_lines"]
