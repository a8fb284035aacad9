"""Chapter 04's checkpoint fixtures behave like the real thing."""

import pytest
import torch

from course_lib import ch04_common_errors as ch
from course_lib.checks.checkpoints import missing_gpu, wrapped_state_dict


def test_missing_gpu_is_a_gpu_this_machine_lacks():
    index = int(missing_gpu().split(":")[1])
    assert index >= (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def test_checkpoint_for_a_missing_gpu_fails_like_a_real_one_and_loads_with_map_location(tmp_path):
    state = ch.TinyNet().state_dict()
    path = ch.save_for_missing_gpu(state, tmp_path / "c.pt")
    assert ch.stored_devices(path) == {missing_gpu()}
    with pytest.raises(RuntimeError, match="map_location"):
        torch.load(path)
    loaded = torch.load(path, map_location="cpu")
    assert list(loaded) == list(state) and all(torch.equal(loaded[k], state[k]) for k in state)
    assert not (tmp_path / "c.cpu-tmp").exists()


def test_named_location_is_written(tmp_path):
    path = ch.save_for_missing_gpu({"w": torch.ones(2)}, tmp_path / "c.pt", location="cuda:3")
    assert ch.stored_devices(path) == {"cuda:3"}


def test_wrapped_state_dict_matches_dataparallel_keys():
    net = ch.TinyNet()
    assert list(wrapped_state_dict(net)) == list(torch.nn.DataParallel(net).state_dict())


def test_tinynet_has_dropout_so_eval_mode_matters():
    net = ch.TinyNet()
    x = torch.ones(64, 4)
    torch.manual_seed(0)
    assert not torch.equal(net(x), net(x))
    net.eval()
    assert torch.equal(net(x), net(x))
