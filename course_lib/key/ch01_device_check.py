"""Answer key for chapter 01 (teacher's copy only)."""

import torch

from course_lib.checks import devices
from course_lib.exercises import AnswerKey, Test, WrongAnswer


def choose_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def gpu_names():
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def make_batch(batch_size, n_features, device):
    return torch.randn(batch_size, n_features, device=device)


KEY = {
    "choose_device": AnswerKey(
        solution=choose_device,
        hidden_tests=[
            Test("picks cuda on a 4-GPU server", devices.Choice("4-GPU server")),
        ],
        wrong_answers=[
            WrongAnswer(
                "returns a string",
                lambda: "cuda" if torch.cuda.is_available() else "cpu",
                "not a torch.device",
            ),
            WrongAnswer(
                "hard-codes cuda:0 (article B's production bug)",
                lambda: torch.device("cuda:0"),
                "On a CPU-only laptop, your choose_device() returned cuda:0",
            ),
            WrongAnswer(
                "forgets the Mac GPU (article A's one-liner)",
                lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu"),
                "On a Mac with Apple GPU, your choose_device() returned cpu",
            ),
        ],
    ),
    "gpu_names": AnswerKey(
        solution=gpu_names,
        hidden_tests=[
            Test("lists the single GPU of a workstation", devices.Names("1-GPU workstation")),
            Test("lists no CUDA GPU on a Mac", devices.Names("Mac with Apple GPU")),
        ],
        wrong_answers=[
            WrongAnswer(
                "only ever asks for GPU 0",
                lambda: [torch.cuda.get_device_name(0)],
                "On a CPU-only laptop, gpu_names() crashed",
            ),
            WrongAnswer(
                "off by one",
                lambda: [
                    torch.cuda.get_device_name(i) for i in range(1, torch.cuda.device_count())
                ],
                "returned 3 name(s); the machine has 4 GPU(s)",
            ),
            WrongAnswer(
                "returns one string",
                lambda: ", ".join(
                    torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())
                ),
                "it must return a list",
            ),
            WrongAnswer(
                "counts accelerators, not CUDA GPUs",
                lambda: [
                    torch.cuda.get_device_name(i) for i in range(torch.accelerator.device_count())
                ],
                "lists no CUDA GPU on a Mac: FAILED",
            ),
        ],
    ),
    "make_batch": AnswerKey(
        solution=make_batch,
        hidden_tests=[
            Test("a batch of one", devices.Batch(1, 7, "meta")),
            Test("device given as a torch.device", devices.Batch(3, 2, torch.device("meta"))),
            Test("standard-normal values", devices.Normal()),
        ],
        wrong_answers=[
            WrongAnswer(
                "creates on the CPU, then copies",
                lambda b, n, d: torch.randn(b, n).to(d),
                "made it on the CPU first",
            ),
            WrongAnswer(
                "ignores the device", lambda b, n, d: torch.randn(b, n), "it came back on cpu"
            ),
            WrongAnswer(
                "swaps the dimensions",
                lambda b, n, d: torch.randn(n, b, device=d),
                "returned shape (3, 4)",
            ),
            WrongAnswer(
                "zeros instead of noise",
                lambda b, n, d: torch.zeros(b, n, device=d),
                "standard-normal values: FAILED",
            ),
        ],
    ),
    "device_label": AnswerKey(answer="c"),
    "model_vs_input": AnswerKey(answer="d"),
    "tensor_bytes": AnswerKey(answer=1048576),
    "created_on_device": AnswerKey(answer=["a", "c"]),
}
