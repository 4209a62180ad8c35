"""Each transformation on a small before/after source: the line the finding names changes as its fix says,
comments and formatting stay, and an ambiguous line keeps its fix in words."""
from __future__ import annotations

import textwrap


def lines(code: str) -> str:
    return textwrap.dedent(code)


def test_item_and_float_keep_the_tensor_but_logging_keeps_its_number(source):
    script = source("""\
        import torch
        w = torch.ones(2, requires_grad=True)
        total = w.sum().item() * 2 + float(w.mean() + 1)  # keep me
        print(f"{w.sum().item()}")
    """)
    assert script.fix("item", 3) == lines("""\
        import torch
        w = torch.ones(2, requires_grad=True)
        total = w.sum() * 2 + (w.mean() + 1)  # keep me
        print(f"{w.sum().item()}")
    """)
    assert script.fix("item", 4).startswith("words: no .item()")


def test_tensor_of_tensors_becomes_stack_and_a_rewrapped_value_the_value_itself(source):
    script = source("""\
        import torch
        a = torch.ones(1, requires_grad=True)
        log_probs = torch.tensor([a, a * 2], dtype=torch.float).view(-1)
        loss = torch.tensor(a.sum() * 3, requires_grad=True)
        scaled = 2 * torch.tensor(a + 1)
    """)
    assert script.fix("tensor_rewrap", 3).splitlines()[2] == \
        "log_probs = torch.stack([a, a * 2]).to(dtype=torch.float).view(-1)"
    assert script.fix("tensor_rewrap", 4).splitlines()[3] == "loss = a.sum() * 3"
    assert script.fix("tensor_rewrap", 5).splitlines()[4] == "scaled = 2 * (a + 1)"


def test_rewrap_without_torch_imported_by_its_name_stays_words(source):
    script = source("""\
        import torch as T
        loss = T.tensor(1.0)
        x = tensor(2.0)
    """)
    assert script.fix("tensor_rewrap", 3).startswith("words: no torch.tensor(")


def test_detach_and_data_reads_are_dropped_but_a_data_assignment_is_not(source):
    script = source("""\
        import torch
        w = torch.ones(2, requires_grad=True)
        pred = (w.detach() * 2).sum()
        out = w.data @ w.data
        w.data = w * 2
    """)
    assert script.fix("detach", 3).splitlines()[2] == "pred = (w * 2).sum()"
    assert script.fix("data_attr", 4).splitlines()[3] == "out = w @ w"
    assert script.fix("data_attr", 5).startswith("words: no .data read")


def test_module_attributes_are_registered_as_parameters_and_containers(source):
    script = source("""\
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.randn(3, requires_grad=True)  # learnable
                self.layers = [nn.Linear(3, 3), nn.Linear(3, 3)]
                self.scales = [nn.Parameter(torch.ones(3)) for _ in range(2)]
                self.heads = {"a": nn.Linear(3, 1)}
                self.mixed = [nn.Linear(3, 3), nn.Parameter(torch.ones(1))]
                self.later = torch.zeros(2)

            def reset(self):
                self.later = torch.ones(2)
    """)
    fixed = {line: script.fix("non_parameter_tensor", line, f"Net.{name}").splitlines()[line - 1].strip()
             for line, name in ((7, "w"), (8, "layers"), (9, "scales"), (10, "heads"))}
    assert fixed == {7: "self.w = nn.Parameter(torch.randn(3))  # learnable",
                     8: "self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])",
                     9: "self.scales = nn.ParameterList([nn.Parameter(torch.ones(3)) for _ in range(2)])",
                     10: 'self.heads = nn.ModuleDict({"a": nn.Linear(3, 1)})'}
    assert script.fix("non_parameter_tensor", 11, "Net.mixed") == \
        "words: the container mixes Parameters with other values"
    assert script.fix("non_parameter_tensor", 12, "Net.later").startswith("words: .later is assigned again at line 15")


def test_a_parameter_converted_after_wrapping_is_wrapped_after_converting(source):
    script = source("""\
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self, device):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(3), requires_grad=True).to(device)  # moved
    """)
    assert script.fix("non_parameter_tensor", 7, "Net.w").splitlines()[6].strip() == \
        "self.w = nn.Parameter(torch.zeros(3).to(device), requires_grad=True)  # moved"


def test_state_dict_snapshot_becomes_a_cloned_one(source):
    script = source("""\
        import torch
        model = torch.nn.Linear(2, 2)
        old = model.state_dict().copy()  # the snapshot
        best = [model.state_dict() for _ in range(2)]
    """)
    assert script.fix("state_dict_alias", 3, "Linear.state_dict()").splitlines()[2] == \
        "old = {key: value.clone() for key, value in model.state_dict().items()}  # the snapshot"
    assert script.fix("state_dict_alias", 4, "Linear.state_dict()").splitlines()[3] == \
        "best = [{key: value.clone() for key, value in model.state_dict().items()} for _ in range(2)]"


def test_loaded_weights_reach_the_later_forward_calls_through_functional_call(source):
    script = source("""\
        import torch
        net = torch.nn.Linear(2, 2)
        before = net(torch.ones(2))
        for step in range(2):
            fast = {name: p * 2 for name, p in net.named_parameters()}
            net.load_state_dict(fast)
            out = net(torch.ones(2), ) + net(torch.zeros(2))
        after = net(torch.ones(2))
    """)
    fixed = script.fix("state_dict_reload", 6, "Linear.weight").splitlines()
    assert fixed[2] == "before = net(torch.ones(2))"  # before the load: unchanged
    assert fixed[5] == "    net.load_state_dict(fast)"
    assert fixed[6] == ("    out = torch.func.functional_call(net, fast, (torch.ones(2),)) + "
                        "torch.func.functional_call(net, fast, (torch.zeros(2),))")
    assert fixed[7] == "after = net(torch.ones(2))"  # another block: unchanged
    assert script.fix("state_dict_reload", 3, "Linear.weight").startswith("words: no load_state_dict(name)")


def test_an_optimizer_built_before_the_model_changed_moves_below_the_change(source):
    script = source("""\
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)  # built too early
        model.append(torch.nn.Linear(2, 1))
        x = torch.ones(2)
        opt.zero_grad()
    """)
    assert script.fix("optimizer", 3, "Sequential.1.weight") == lines("""\
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        model.append(torch.nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)  # built too early
        x = torch.ones(2)
        opt.zero_grad()
    """)


def test_a_submodule_left_out_joins_the_optimizer_of_its_siblings(source):
    script = source("""\
        import torch
        opt = torch.optim.Adam(model.encoder.parameters(), lr=1e-2)
        other = torch.optim.Adam(model.parameters())
    """)
    bias = script.finding("optimizer", 2, "AutoEncoder.decoder.bias")
    assert script.fix("optimizer", 2, "AutoEncoder.decoder.weight", bias).splitlines()[1] == \
        "opt = torch.optim.Adam([*model.encoder.parameters(), *model.decoder.parameters()], lr=1e-2)"
    assert script.fix("optimizer", 3, "Net.head.weight").startswith("words: Net.head.weight is not a named submodule")


def test_a_converted_leaf_is_created_as_it_is_used(source):
    script = source("""\
        import torch
        x = torch.randn(5, requires_grad=True).to(torch.float64)
        w = torch.randn(4, 3, requires_grad=True)
        w = torch.nn.functional.normalize(w, dim=1)
        eta = torch.nn.Parameter(torch.rand(3), requires_grad=True)
        eta = eta * 2
        z = y * 2
    """)
    assert script.fix("non_leaf_watched", 2, "x").splitlines()[1] == \
        "x = torch.randn(5).to(torch.float64).requires_grad_()"
    assert script.fix("non_leaf_watched", 4, "w").splitlines()[2:4] == [
        "w = torch.randn(4, 3)", "w = torch.nn.functional.normalize(w, dim=1).requires_grad_()"]
    assert script.fix("non_leaf_watched", 6, "eta").splitlines()[4:6] == ["eta = torch.rand(3)",
                                                                         "eta = (eta * 2).requires_grad_()"]
    assert script.fix("non_leaf_watched", 7, "z").startswith("words: no z = ...(requires_grad=True) earlier")


def test_kinds_without_a_mechanical_fix_keep_their_words(source):
    script = source("""\
        import torch
        with torch.no_grad():
            y = torch.ones(1)
    """)
    assert script.fix("no_grad", 3) == "words: no mechanical fix for this kind"
