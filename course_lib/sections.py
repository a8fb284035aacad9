"""Where each chapter teaches what: the notebooks' numbered sections, named by their headings.

Learner-facing text in course_lib (quiz hints, check feedback, explainer entries) never types a
section number: it names the section by words of its heading, ``section("06", "empty_cache")``
-> ``"section 3.5"``. The numbers are typed once, here, and tests/test_section_refs.py checks each
against the notebook's real heading (its number, and these words in its title), and refuses a
section number typed anywhere else in course_lib's text.
"""

SECTIONS = {  # chapter -> {words of a heading: that heading's number}
    "01": {
        "Ask the machine": "1",
        "Choose the device once": "2",
        "only a label": "3",
        "Create tensors where they will be used": "4",
    },
    "02": {
        "Two devices on every machine": "1",
        "forgetting any one of them": "2",
        "`Module.to` and `Tensor.to`": "3",
        "Losses": "4",
        "Diagnose": "5",
    },
    "03": {
        "The device, chosen once": "1",
        "a Dataset and a DataLoader": "2",
        "The model": "3",
        "Loss and optimizer": "4",
        "One training step": "5",
        "The evaluation loop": "6",
        "`zero_grad` story": "8",
        "plain Python": "9",
    },
    "04": {
        "data on the CPU": "1",
        "evaluation loop": "2",
        "Born on the CPU": "3",
        "Checkpoints": "4",
        "Let the course read the error": "6",
    },
    "05": {
        "Timing GPU code": "1",
        "Is the GPU starving": "2",
        "`num_workers`": "3",
        "`pin_memory` and `non_blocking`": "4",
        "Mixed precision": "5",
        "`torch.compile`": "6",
    },
    "06": {
        "Where the memory goes": "1",
        "A real out-of-memory error": "2",
        "The fixes": "3",
        "A smaller batch": "3.1",
        "`torch.no_grad()`": "3.2",
        "`loss.item()`": "3.4",
        "empty_cache": "3.5",
        "Gradient accumulation": "3.6",
        "Mixed precision": "3.7",
        "Activation checkpointing": "3.8",
        "Article A's question": "4",
    },
    "07": {
        "DataParallel: one process": "1",
        "DistributedDataParallel, for real": "2",
        "faster, not smarter": "3",
        "One step, phase by phase": "4",
        "Exercises": "5",
    },
    "08": {
        "What every DDP rank holds": "1",
        "FSDP2, for real": "2",
        "What sharding costs": "3",
        "Exercise and quizzes": "4",
    },
}


def section(
    chapter: str, heading_words: str, *, chapter_too: bool = False, start: bool = False
) -> str:
    """'section 3.5' for notebook `chapter`'s heading containing `heading_words` (all chapters).

    ``chapter_too=True`` gives 'chapter 06, section 3.5' (a reference from another chapter);
    ``start=True`` capitalizes it for the start of a sentence.
    """
    text = f"section {SECTIONS[chapter][heading_words]}"
    text = f"chapter {chapter}, {text}" if chapter_too else text
    return text[0].upper() + text[1:] if start else text


__all__ = ["SECTIONS", "section"]
