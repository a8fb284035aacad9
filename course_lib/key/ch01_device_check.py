"""Answer key for chapter 01 (teacher's copy only)."""
import torch

from course_lib.ch01_device_check import _check_batch, _check_choice, _check_names
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
            Test("uses the Apple GPU on a Mac", _check_choice(
                "Mac with Apple GPU", "Check torch.backends.mps.is_available() when there is no CUDA GPU.")),
            Test("picks cuda on a 4-GPU server", _check_choice(
                "4-GPU server", "With several GPUs, 'cuda' (the current one, usually cuda:0) is right.")),
        ],
        wrong_answers=[
            WrongAnswer("returns a string", lambda: "cuda" if torch.cuda.is_available() else "cpu",
                        "not a torch.device"),
            WrongAnswer("hard-codes cuda:0 (the seed's production bug)", lambda: torch.device("cuda:0"),
                        "CPU-only laptop"),
            WrongAnswer("forgets the Mac GPU (the seed's one-liner)",
                        lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu"), ""),
        ],
    ),
    "gpu_names": AnswerKey(
        solution=gpu_names,
        hidden_tests=[
            Test("returns [] on a CPU-only laptop without crashing", _check_names("CPU-only laptop")),
            Test("lists the single GPU of a workstation", _check_names("1-GPU workstation")),
        ],
        wrong_answers=[
            WrongAnswer("only ever asks for GPU 0", lambda: [torch.cuda.get_device_name(0)], ""),
            WrongAnswer("off by one", lambda: [torch.cuda.get_device_name(i)
                                               for i in range(1, torch.cuda.device_count())], "names are not right"),
            WrongAnswer("returns one string", lambda: ", ".join(
                torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())), "must return a list"),
        ],
    ),
    "make_batch": AnswerKey(
        solution=make_batch,
        hidden_tests=[
            Test("a batch of one", _check_batch(1, 7, "meta")),
            Test("device given as a torch.device", _check_batch(3, 2, torch.device("meta"))),
        ],
        wrong_answers=[
            WrongAnswer("creates on the CPU, then copies", lambda b, n, d: torch.randn(b, n).to(d),
                        "copied"),
            WrongAnswer("ignores the device", lambda b, n, d: torch.randn(b, n), "not on meta"),
            WrongAnswer("swaps the dimensions", lambda b, n, d: torch.randn(n, b, device=d), "shape"),
        ],
    ),
    "device_label": AnswerKey(answer="b"),
    "model_vs_input": AnswerKey(answer="a"),
    "tensor_bytes": AnswerKey(answer=1048576),
    "created_on_device": AnswerKey(answer=["a", "c"]),
}
