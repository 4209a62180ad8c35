"""Autograd's own errors (`autograd_error`): one small script per category, with the line to change marked
``# <- autograd_error`` (and PyTorch's call ``# <- symptom`` where it differs), and a corrected twin that
runs and stays silent. A refused backward is always reported, also when the script catches the error.

The reports behind it: tests/cases/b4_rnn_hidden_not_detached, b4_manual_update_leaf_inplace,
b4_fold_bn_weight_slice_assign, b4_custom_function_missing_grad, b4_deepcopy_cached_activation,
b4_inference_mode_backbone, b4_rank_loss_not_scalar; for the line to change of a value kept on an object, a loss
reused whole, a per-sample term and a gradient under inference_mode: b7_shiftnet_ragan_pred_real_reused,
b16c_infini_attention_memory_not_detached, b9_fmri_lstm_hidden_state_carried, b9_bigram_forward_outside_loop, b9_cdfi_regularizer_not_scalar,
b6_sar_loss_not_scalar, b7_refnerf_normals_under_inference_mode, b9_lightning_test_step_inference_mode; for layers
made to write in place: b8_xception_inplace_relu_after_identity, b8_mvanet_modules_set_inplace; for requires_grad on a
non-leaf, an inference tensor made under a caller's block, a row write into a saved tensor and computed weights
loaded into a model: b10_pinn_moving_boundary_requires_grad_non_leaf, b10_deepfool_requires_grad_on_updated_image,
b10_qat_calibration_in_inference_mode, b10_row_update_of_saved_matmul_input, b10_melu_local_update_load_state_dict;
for a loss backpropagated again by a second call after a helper ran its backward: b11_rdrop_summarization_backward_twice,
https://github.com/VinAIResearch/PSENet-Image-Enhancement/issues/1 (loss.backward() added to a Lightning training_step);
for an in-place write into one of several views an op returned (unbind, chunk, split), refused in forward:
b11_adversarial_deepfakes_normalize_inplace_per_channel, b11_unsupdis_homography_eps_clamp_on_chunk_view; for the
other refusals in forward (out=, resize_, requires_grad on integers, views from no_grad or from a custom Function,
detach_ of a view, retain_grad on a value without history), the words of torch's own messages, and
b12_dig_spherenet_freq_arange_out_leaf, b31a_l2l_lstm_optimizer_retain_grad_sgd_update; for a hook that returned
gradients of another shape: b31c_fa_layers_linear_hook_bias_false_grad_input_slot; for autograd.grad asked for a model's
weights after a deep copy of it ran: b31a_maml_sines_deepcopy_inner_model.
"""
from __future__ import annotations

import textwrap

import pytest

from gradcheck_l2c.present.textreport import format_report, summary_line
from gradcheck_l2c.tracer import trace

PRELUDE = """
import copy
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
"""


def traced(snippet, code: str):
    """Run the script under a trace; its findings, and the error it raised (or None)."""
    script = snippet(PRELUDE + textwrap.dedent(code))
    t = trace()
    namespace = {"__name__": "__main__", "__file__": str(script.path)}
    error = None
    try:
        with t:
            exec(compile(script.code, str(script.path), "exec"), namespace)
    except (RuntimeError, NotImplementedError) as exc:
        error = exc
    return script, t, error


CHECKPOINT = """
class Checkpoint(torch.autograd.Function):  # latent-diffusion's: it asks for the block's parameters' gradients too
    @staticmethod
    def forward(ctx, run, n, *args):
        ctx.run, ctx.inputs, ctx.params = run, list(args[:n]), list(args[n:])
        with torch.no_grad():
            return run(*ctx.inputs)

    @staticmethod
    def backward(ctx, *grads):
        inputs = [t.detach().requires_grad_(True) for t in ctx.inputs]
        with torch.enable_grad():
            out = ctx.run(*inputs)
        return (None, None) + torch.autograd.grad(out, inputs + ctx.params, grads, allow_unused=True)
"""

CASES = {
    # a boundary value cached in the first iteration, made after a PINN's autograd.grad(create_graph=True) (deepxde#1612)
    "freed_after_create_graph": ("""
        net, c = nn.Linear(1, 1), torch.tensor(0.1, requires_grad=True)
        opt = torch.optim.Adam([*net.parameters(), c], lr=0.01)
        cache = {}
        for step in range(3):
            xs = torch.rand(8, 1, requires_grad=True)
            du = torch.autograd.grad(net(xs).sum(), xs, create_graph=True)[0]
            if "bc" not in cache:
                cache["bc"] = c * torch.ones(8, 1)  # <- autograd_error
            loss = (du - cache["bc"]).pow(2).mean()
            opt.zero_grad()
            loss.backward()  # <- symptom
            opt.step()
        """, """
        net, c = nn.Linear(1, 1), torch.tensor(0.1, requires_grad=True)
        opt = torch.optim.Adam([*net.parameters(), c], lr=0.01)
        for step in range(3):
            xs = torch.rand(8, 1, requires_grad=True)
            du = torch.autograd.grad(net(xs).sum(), xs, create_graph=True)[0]
            bc = c * torch.ones(8, 1)
            loss = (du - bc).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """),
    # a library's parameter store sets requires_grad on what it is given: a cast of the user's leaf (pyro#953)
    "requires_grad_made_elsewhere": ("""
        store = {}
        def param(name, init):
            init.requires_grad = True  # <- symptom
            return store.setdefault(name, init)
        w = param("w", torch.randn(4, 3, requires_grad=True).double())  # <- autograd_error
        """, """
        store = {}
        def param(name, init):
            init.requires_grad = True
            return store.setdefault(name, init)
        w = param("w", torch.randn(4, 3).double())
        F.cross_entropy(x.double() @ w, y).backward()
        """),
    # a reentrant checkpoint of its own asks autograd.grad for parameters the script froze (T2I-Adapter's frozen UNet)
    "checkpoint_frozen": (CHECKPOINT + """
block, adapter = nn.Linear(4, 4), nn.Linear(4, 4)
for p in block.parameters():
    p.requires_grad = False  # <- autograd_error
opt = torch.optim.SGD(adapter.parameters(), lr=0.1)
for step in range(2):
    h = Checkpoint.apply(block, 1, adapter(x), *block.parameters())
    opt.zero_grad()
    F.cross_entropy(h[:, :3], y).backward()  # <- symptom
    opt.step()
""", CHECKPOINT + """
block, adapter = nn.Linear(4, 4), nn.Linear(4, 4)
for p in block.parameters():
    p.requires_grad = False
opt = torch.optim.SGD(adapter.parameters(), lr=0.1)
for step in range(2):
    h = Checkpoint.apply(block, 1, adapter(x), *[p for p in block.parameters() if p.requires_grad])
    opt.zero_grad()
    F.cross_entropy(h[:, :3], y).backward()
    opt.step()
"""),
    # a hidden state carried from one iteration into the next keeps the graph the last backward freed
    "freed_carried": ("""
        cell = nn.RNNCell(4, 6)
        head = nn.Linear(6, 3)
        h = torch.zeros(8, 6)
        for step in range(3):
            h = cell(x, h)  # <- autograd_error
            loss = F.cross_entropy(head(h), y)
            loss.backward()  # <- symptom
        """, """
        cell = nn.RNNCell(4, 6)
        head = nn.Linear(6, 3)
        h = torch.zeros(8, 6)
        for step in range(3):
            h = cell(x, h.detach())
            loss = F.cross_entropy(head(h), y)
            loss.backward()
        """),
    # a module's memory, computed on one line and kept as its attribute on another, carries the freed graph into
    # the next segment's backward: the line that keeps it is the one to change (b16c_infini_attention)
    "freed_module_memory": ("""
        class Memory(nn.Module):
            def __init__(self):
                super().__init__()
                self.key, self.head, self.memory = nn.Linear(4, 4), nn.Linear(4, 3), None

            def forward(self, inputs):
                keys = self.key(inputs)
                if self.memory is None:
                    self.memory = torch.zeros(4)
                out = self.head(keys + self.memory)
                updated = self.memory + keys.mean(0)
                self.memory = updated  # <- autograd_error
                return out

        model = Memory()
        for segment in range(3):
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # <- symptom
        """, """
        class Memory(nn.Module):
            def __init__(self):
                super().__init__()
                self.key, self.head, self.memory = nn.Linear(4, 4), nn.Linear(4, 3), None

            def forward(self, inputs):
                keys = self.key(inputs)
                if self.memory is None:
                    self.memory = torch.zeros(4)
                out = self.head(keys + self.memory)
                updated = self.memory + keys.mean(0)
                self.memory = updated.detach()
                return out

        model = Memory()
        for segment in range(3):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
        """),
    # the discriminator's backward frees the generator's graph that the generator's loss needs again
    "freed_shared": ("""
        G, D = nn.Linear(4, 4), nn.Linear(4, 1)
        fake = G(x)  # <- autograd_error
        loss_d = D(fake).mean()
        loss_d.backward()
        loss_g = -D(fake).mean()
        loss_g.backward()  # <- symptom
        """, """
        G, D = nn.Linear(4, 4), nn.Linear(4, 1)
        fake = G(x)
        loss_d = D(fake.detach()).mean()
        loss_d.backward()
        loss_g = -D(fake).mean()
        loss_g.backward()
        """),
    # the generator's backward freed its graph and its step used it; the discriminator's loss, on the fake made
    # for both losses, takes that freed graph in: the line to change is where it does (b19c_so_gan)
    "freed_taken_in_after_a_step": ("""
        G, D = nn.Linear(4, 4), nn.Linear(4, 1)
        opt_g, opt_d = torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
        fake = G(x)
        loss_g = F.softplus(-D(fake)).mean()
        loss_d = F.softplus(-D(x)).mean() + F.softplus(D(fake)).mean()  # <- autograd_error
        loss_g.backward()
        opt_g.step()
        loss_d.backward()  # <- symptom
        opt_d.step()
        """, """
        G, D = nn.Linear(4, 4), nn.Linear(4, 1)
        opt_g, opt_d = torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
        fake = G(x)
        loss_g = F.softplus(-D(fake)).mean()
        loss_d = F.softplus(-D(x)).mean() + F.softplus(D(fake.detach())).mean()
        loss_g.backward()
        opt_g.step()
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        """),
    # the same loss backpropagated twice
    "freed_twice": ("""
        model = nn.Linear(4, 3)
        loss = F.cross_entropy(model(x), y)  # <- autograd_error
        loss.backward()
        loss.backward()  # <- symptom
        """, """
        model = nn.Linear(4, 3)
        loss = F.cross_entropy(model(x), y)
        loss.backward(retain_graph=True)
        loss.backward()
        """),
    # a module that keeps its hidden state as an attribute carries the freed graph into the next step
    "freed_module_state": ("""
        class Tracker(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell, self.head, self.hidden = nn.RNNCell(4, 6), nn.Linear(6, 3), torch.zeros(8, 6)

            def forward(self, inputs):
                self.hidden = self.cell(inputs, self.hidden)  # <- autograd_error
                return self.head(self.hidden)

        model = Tracker()
        for step in range(3):
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # <- symptom
        """, """
        class Tracker(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell, self.head, self.hidden = nn.RNNCell(4, 6), nn.Linear(6, 3), torch.zeros(8, 6)

            def forward(self, inputs):
                self.hidden = self.cell(inputs, self.hidden.detach())
                return self.head(self.hidden)

        model = Tracker()
        for step in range(3):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
        """),
    # a value a method keeps on its object carries the graph that method's backward freed into another's
    "freed_attribute_carried": ("""
        class Steps:
            def __init__(self):
                self.encoder, self.head = nn.Linear(4, 4), nn.Linear(4, 1)

            def first(self):
                self.code = self.encoder(x).tanh()  # <- autograd_error
                self.head(self.code).mean().backward()

            def second(self):
                (self.code ** 2).mean().backward()  # <- symptom

        steps = Steps()
        steps.first()
        steps.second()
        """, """
        class Steps:
            def __init__(self):
                self.encoder, self.head = nn.Linear(4, 4), nn.Linear(4, 1)

            def first(self):
                self.code = self.encoder(x).tanh()
                self.head(self.code).mean().backward(retain_graph=True)

            def second(self):
                (self.code ** 2).mean().backward()

        steps = Steps()
        steps.first()
        steps.second()
        """),
    # a forward pass of several lines computed once before the loop: it starts on its first line
    "freed_forward_once": ("""
        model = nn.Linear(4, 3)
        hidden = model(x)  # <- autograd_error
        scores = hidden.relu() * 2
        loss = F.cross_entropy(scores, y)
        for step in range(2):
            model.zero_grad()
            loss.backward()  # <- symptom
        """, """
        model = nn.Linear(4, 3)
        for step in range(2):
            hidden = model(x)
            scores = hidden.relu() * 2
            loss = F.cross_entropy(scores, y)
            model.zero_grad()
            loss.backward()
        """),
    # a per-sample term added to a one-valued loss: the term's line, where it was meant to be reduced
    "non_scalar_term": ("""
        model = nn.Linear(4, 3)
        out = model(x)
        per_sample = out.pow(2).mean(1)
        penalty = 0.1 * per_sample  # <- autograd_error
        loss = F.cross_entropy(out, y) + penalty
        loss.backward()  # <- symptom
        """, """
        model = nn.Linear(4, 3)
        out = model(x)
        per_sample = out.pow(2).mean(1)
        penalty = 0.1 * per_sample.mean()
        loss = F.cross_entropy(out, y) + penalty
        loss.backward()
        """),
    # a gradient taken under enable_grad() inside inference_mode(): the line under inference_mode
    "graphless_inference_mode": ("""
        model = nn.Linear(4, 3)

        def input_gradient(inputs):
            with torch.enable_grad():
                inputs = inputs.clone().requires_grad_()
                score = model(inputs).sum()
                return torch.autograd.grad(score, inputs)[0]  # <- symptom

        with torch.inference_mode():
            saliency = input_gradient(x)  # <- autograd_error
        """, """
        model = nn.Linear(4, 3)

        def input_gradient(inputs):
            with torch.enable_grad():
                inputs = inputs.clone().requires_grad_()
                score = model(inputs).sum()
                return torch.autograd.grad(score, inputs)[0]

        with torch.no_grad():
            saliency = input_gradient(x)
        """),
    "non_scalar_root": ("""
        model = nn.Linear(4, 3)

        def per_sample(out, target):
            return F.cross_entropy(out, target, reduction="none")  # <- autograd_error

        per_sample(model(x), y).backward()  # <- symptom
        """, """
        model = nn.Linear(4, 3)

        def per_sample(out, target):
            return F.cross_entropy(out, target, reduction="none").mean()

        per_sample(model(x), y).backward()
        """),
    "inplace_leaf": ("""
        w = torch.randn(4, 3, requires_grad=True)
        for step in range(2):
            loss = F.cross_entropy(x @ w, y)
            loss.backward()
            w -= 0.1 * w.grad  # <- autograd_error
            w.grad = None
        """, """
        w = torch.randn(4, 3, requires_grad=True)
        for step in range(2):
            loss = F.cross_entropy(x @ w, y)
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
        """),
    "inference_saved": ("""
        backbone, head = nn.Linear(4, 4), nn.Linear(4, 3)
        backbone.requires_grad_(False)
        with torch.inference_mode():
            features = backbone(x)  # <- autograd_error
        loss = F.cross_entropy(head(features), y)  # <- symptom
        loss.backward()
        """, """
        backbone, head = nn.Linear(4, 4), nn.Linear(4, 3)
        backbone.requires_grad_(False)
        with torch.no_grad():
            features = backbone(x)
        loss = F.cross_entropy(head(features), y)
        loss.backward()
        """),
    # the calls under a caller's inference_mode block made the cached scale an inference tensor: the block
    "inference_saved_in_callee": ("""
        class Calibrated(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc, self.scale = nn.Linear(4, 3), None

            def forward(self, inputs):
                if self.scale is None:
                    self.scale = inputs.abs().amax()
                return self.fc(inputs) / self.scale  # <- symptom

        model = Calibrated()
        with torch.inference_mode():  # <- autograd_error
            model(x)
        F.cross_entropy(model(x), y).backward()
        """, """
        class Calibrated(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc, self.scale = nn.Linear(4, 3), None

            def forward(self, inputs):
                if self.scale is None:
                    self.scale = inputs.abs().amax()
                return self.fc(inputs) / self.scale

        model = Calibrated()
        with torch.no_grad():
            model(x)
        F.cross_entropy(model(x), y).backward()
        """),
    # requires_grad switched on for a computed value: the line itself makes a new leaf
    "requires_grad_non_leaf": ("""
        encoder, head = nn.Linear(4, 4), nn.Linear(4, 3)
        codes = encoder(x)
        codes.requires_grad = True  # <- autograd_error
        saliency = torch.autograd.grad(head(codes).sum(), codes)[0]
        """, """
        encoder, head = nn.Linear(4, 4), nn.Linear(4, 3)
        codes = encoder(x).detach().requires_grad_(True)
        saliency = torch.autograd.grad(head(codes).sum(), codes)[0]
        """),
    # an iterate made a leaf by the same line each pass, updated out of place with its history: the update
    "requires_grad_carried": ("""
        model = nn.Linear(4, 3)
        point = x[:1].clone()
        for step in range(3):
            point.requires_grad = True  # <- symptom
            slope = torch.autograd.grad(model(point).max(), point)[0]
            point = point + 0.1 * slope.sign()  # <- autograd_error
        """, """
        model = nn.Linear(4, 3)
        point = x[:1].clone()
        for step in range(3):
            point.requires_grad = True
            slope = torch.autograd.grad(model(point).max(), point)[0]
            point = (point + 0.1 * slope.sign()).detach()
        """),
    "function_backward": ("""
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad * b  # <- autograd_error

        w = torch.randn(8, 4, requires_grad=True)
        Scale.apply(w, x).sum().backward()  # <- symptom
        """, """
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad):
                a, b = ctx.saved_tensors
                return grad * b, grad * a

        w = torch.randn(8, 4, requires_grad=True)
        Scale.apply(w, x).sum().backward()
        """),
    # a custom Function with a forward only: the class is the line to change
    "function_no_backward": ("""
        class Scale(torch.autograd.Function):  # <- autograd_error
            @staticmethod
            def forward(ctx, a):
                return a * 2

        model = nn.Linear(4, 3)
        loss = F.cross_entropy(Scale.apply(model(x)), y)
        loss.backward()  # <- symptom
        """, """
        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        model = nn.Linear(4, 3)
        loss = F.cross_entropy(Scale.apply(model(x)), y)
        loss.backward()
        """),
    # NumPy given losses that still require grad (an evaluation that sums them with np.sum)
    "numpy_requires_grad": ("""
        import numpy as np
        model = nn.Linear(4, 3)
        losses = [F.cross_entropy(model(x[i:i + 4]), y[i:i + 4]) for i in (0, 4)]
        mean_loss = np.mean(losses)  # <- autograd_error
        """, """
        import numpy as np
        model = nn.Linear(4, 3)
        losses = [F.cross_entropy(model(x[i:i + 4]), y[i:i + 4]).item() for i in (0, 4)]
        mean_loss = np.mean(losses)
        """),
    # a gradient hook put on a frozen parameter (a pruning mask over every layer, some of them frozen)
    "hook_no_grad": ("""
        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 3))
        model[0].requires_grad_(False)
        for layer in model:
            layer.weight.register_hook(lambda grad: grad * 0.5)  # <- autograd_error
        """, """
        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 3))
        model[0].requires_grad_(False)
        for layer in model:
            if layer.weight.requires_grad:
                layer.weight.register_hook(lambda grad: grad * 0.5)
        F.cross_entropy(model(x), y).backward()
        """),
    # MAML's inner loop run on a deep copy of the model, differentiated for the original's weights
    "unused_input_deepcopy": ("""
        model = nn.Linear(4, 3)
        weights = list(model.parameters())
        inner = copy.deepcopy(model)  # <- autograd_error
        loss = F.cross_entropy(inner(x), y)
        torch.autograd.grad(loss, weights)  # <- symptom
        """, """
        model = nn.Linear(4, 3)
        weights = dict(model.named_parameters())
        loss = F.cross_entropy(torch.func.functional_call(model, weights, (x,)), y)
        torch.autograd.grad(loss, list(weights.values()))
        """),
    # a gradient-replacing hook that swaps a slot the layer has only with a bias (feedback alignment, bias=False)
    "hook_result": ("""
        def feedback(module, grad_input, grad_output):
            if grad_input[1] is not None:
                return (grad_input[0], grad_output[0] @ module.weight) + grad_input[2:]  # <- autograd_error

        layer = nn.Linear(4, 3, bias=False)
        layer.register_backward_hook(feedback)
        F.cross_entropy(layer(x), y).backward()  # <- symptom
        """, """
        def feedback(module, grad_input, grad_output):
            if grad_input[0] is not None:
                return (grad_output[0] @ module.weight,) + grad_input[1:]

        layer = nn.Linear(4, 3, bias=False)
        layer.register_full_backward_hook(feedback)
        F.cross_entropy(layer(x.requires_grad_()), y).backward()
        """),
    # retain_grad() on an update computed from a detached gradient (a learned optimizer's loop run with plain SGD)
    "retain_grad_no_grad": ("""
        w = torch.randn(4, requires_grad=True)
        (w * x).sum().backward()
        update = -0.1 * w.grad.detach()
        w2 = w + update
        update.retain_grad()  # <- autograd_error
        """, """
        w = torch.randn(4, requires_grad=True)
        (w * x).sum().backward()
        update = -0.1 * w.grad.detach()
        w2 = w + update
        if update.requires_grad:
            update.retain_grad()
        (w2 * x).sum().backward()
        """),
    "deepcopy_non_leaf": ("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)

            def forward(self, inputs):
                out = self.fc(inputs)
                self.last = out  # <- autograd_error
                return out

        model = Net()
        F.cross_entropy(model(x), y).backward()
        ema = copy.deepcopy(model)  # <- symptom
        """, """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)

            def forward(self, inputs):
                out = self.fc(inputs)
                self.last = out.detach()
                return out

        model = Net()
        F.cross_entropy(model(x), y).backward()
        ema = copy.deepcopy(model)
        """),
    "unused_input": ("""
        w = torch.randn(4, 3, requires_grad=True)
        out = (x @ w).sum()
        w = w.double()
        (grad,) = torch.autograd.grad(out, w)  # <- autograd_error
        """, """
        w = torch.randn(4, 3, requires_grad=True)
        out = (x @ w).sum()
        (grad,) = torch.autograd.grad(out, w)
        w = w.double()
        """),
    "input_no_grad": ("""
        w = torch.randn(4, 3, requires_grad=True)
        scale = torch.ones(3)
        out = (x @ w * scale).sum()
        grads = torch.autograd.grad(out, [w, scale])  # <- autograd_error
        """, """
        w = torch.randn(4, 3, requires_grad=True)
        scale = torch.ones(3, requires_grad=True)
        out = (x @ w * scale).sum()
        grads = torch.autograd.grad(out, [w, scale])
        """),
    "graphless": ("""
        w = torch.randn(4, 3)
        loss = F.cross_entropy(x @ w, y)
        loss.backward()  # <- autograd_error
        """, """
        w = torch.randn(4, 3, requires_grad=True)
        loss = F.cross_entropy(x @ w, y)
        loss.backward()
        """),
    "graphless_loss_without_model": ("""
        model = nn.Linear(4, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        before = model.weight.detach().clone()  # a snapshot, no cut of the loss
        target = torch.randn(8, 3)
        for step in range(2):
            out = model(x)
            loss = F.mse_loss(target * 0.5, target)  # <- autograd_error
            optimizer.zero_grad()
            loss.backward()  # <- symptom
            optimizer.step()
        """, """
        model = nn.Linear(4, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        before = model.weight.detach().clone()  # a snapshot, no cut of the loss
        target = torch.randn(8, 3)
        for step in range(2):
            out = model(x)
            loss = F.mse_loss(out, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """),
    "gradient_shape": ("""
        w = torch.randn(4, 3, requires_grad=True)
        out = x @ w
        out.backward(torch.ones(8))  # <- autograd_error
        """, """
        w = torch.randn(4, 3, requires_grad=True)
        out = x @ w
        out.backward(torch.ones_like(out))
        """),
    # a step function that already ran backward, and a loop that runs it again on the loss it returned
    "freed_called_again": ("""
        model = nn.Linear(4, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def training_step(inputs, targets):
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            return loss

        for step in range(2):
            opt.zero_grad()
            loss = training_step(x, y)
            loss.backward()  # <- autograd_error
            opt.step()
        """, """
        model = nn.Linear(4, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def training_step(inputs, targets):
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            return loss

        for step in range(2):
            opt.zero_grad()
            loss = training_step(x, y)
            opt.step()
        """),
    # an in-place write into one of the views split() returned (a fused projection cut into q, k, v)
    "inplace_multi_view": ("""
        proj = nn.Linear(4, 12)
        q, k, v = proj(x).split(4, dim=1)
        q *= 0.5  # <- autograd_error
        loss = F.cross_entropy(torch.softmax(q @ k.t(), -1) @ v[:, :3], y)
        loss.backward()
        """, """
        proj = nn.Linear(4, 12)
        q, k, v = proj(x).split(4, dim=1)
        q = q * 0.5
        loss = F.cross_entropy(torch.softmax(q @ k.t(), -1) @ v[:, :3], y)
        loss.backward()
        """),
    # iterating over a tensor unbinds it: rows clipped in place one by one
    "inplace_multi_view_rows": ("""
        layer = nn.Linear(4, 3)
        scores = layer(x)
        for row in scores:
            row.clamp_(-1, 1)  # <- autograd_error
        F.cross_entropy(scores, y).backward()
        """, """
        layer = nn.Linear(4, 3)
        scores = layer(x).clamp(-1, 1)
        F.cross_entropy(scores, y).backward()
        """),
    # an error raised by user code inside the backward: the line that raised
    "raised_inside": ("""
        class Clip(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.clamp(-1, 1)

            @staticmethod
            def backward(ctx, grad):
                return grad.view(3, -1)  # <- autograd_error

        w = torch.randn(8, 4, requires_grad=True)
        Clip.apply(w).sum().backward()  # <- symptom
        """, """
        class Clip(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.clamp(-1, 1)

            @staticmethod
            def backward(ctx, grad):
                return grad.view(8, -1)

        w = torch.randn(8, 4, requires_grad=True)
        Clip.apply(w).sum().backward()
        """),
    # refused in forward, by the op itself (the words of torch's messages, one category each); a write into a
    # view a custom Function returned is named at the Function's return (gustavecortal/gpt-j-fine-tuning-example#1)
    # initialising a Parameter with out= in grad mode (divelab/DIG#164, the fix of DGL's DimeNet)
    "out_requires_grad": ("""
        freq = nn.Parameter(torch.empty(4))
        torch.arange(1, 5, out=freq).mul_(3.14)  # <- autograd_error
        (freq * x).sum().backward()
        """, """
        freq = nn.Parameter(torch.empty(4))
        with torch.no_grad():
            torch.arange(1, 5, out=freq).mul_(3.14)
        freq.requires_grad_()  # out= under no_grad switched it off
        (freq * x).sum().backward()
        """),
    "resize_requires_grad": ("""
        w = torch.randn(3, requires_grad=True)
        w.resize_(4)  # <- autograd_error
        (w * x).sum().backward()
        """, """
        w = torch.randn(3, requires_grad=True)
        (F.pad(w, (0, 1)) * x).sum().backward()
        """),
    "dtype_requires_grad": ("""
        scale = torch.tensor([1, 2, 3, 4], requires_grad=True)  # <- autograd_error
        (scale * x).sum().backward()
        """, """
        scale = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        (scale * x).sum().backward()
        """),
    # requires_grad_() on integers (a quantized layer's weight made trainable: b20e_peft_qlora) words it otherwise
    "dtype_requires_grad_method": ("""
        codes = torch.randint(0, 255, (4,), dtype=torch.uint8)
        codes.requires_grad_(True)  # <- autograd_error
        (codes.float() * x).sum().backward()
        """, """
        codes = torch.randint(0, 255, (4,), dtype=torch.uint8).float()
        codes.requires_grad_(True)
        (codes * x).sum().backward()
        """),
    "inplace_nograd_view": ("""
        w = torch.randn(8, 4, requires_grad=True)
        h = w * 2
        with torch.no_grad():
            row = h[0]
        row.mul_(2)  # <- autograd_error
        h.sum().backward()
        """, """
        w = torch.randn(8, 4, requires_grad=True)
        h = w * 2
        row = h[0]
        row.mul_(2)
        h.sum().backward()
        """),
    "inplace_function_view": ("""
        class Ident(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.view_as(a)  # <- autograd_error

            @staticmethod
            def backward(ctx, grad):
                return grad

        w = torch.randn(8, 4, requires_grad=True)
        out = Ident.apply(w * 1)
        out.add_(1)  # <- symptom
        out.sum().backward()
        """, """
        class Ident(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.clone()

            @staticmethod
            def backward(ctx, grad):
                return grad

        w = torch.randn(8, 4, requires_grad=True)
        out = Ident.apply(w * 1)
        out.add_(1)
        out.sum().backward()
        """),
    "detach_view": ("""
        w = torch.randn(8, 4, requires_grad=True)
        h = (w * 2)[0]
        h.detach_()  # <- autograd_error
        (w * 2).sum().backward()
        """, """
        w = torch.randn(8, 4, requires_grad=True)
        h = (w * 2)[0].detach()
        (w * 2).sum().backward()
        """),
    # an inner optimisation inside a custom Function's forward, which runs with gradients off (pytorch#32091)
    "graphless_in_function_forward": ("""
        class Refine(torch.autograd.Function):
            @staticmethod
            def forward(ctx, h):
                z = h.clone().requires_grad_()
                for _ in range(3):
                    energy = (z - h).pow(2).sum() + z.abs().sum()  # <- autograd_error
                    grad, = torch.autograd.grad(energy, z)  # <- symptom
                    z = (z - 0.1 * grad).detach().requires_grad_()
                return z.detach()

            @staticmethod
            def backward(ctx, grad_out):
                return grad_out

        layer = nn.Linear(4, 4)
        Refine.apply(layer(x)).sum().backward()
        """, """
        class Refine(torch.autograd.Function):
            @staticmethod
            def forward(ctx, h):
                h = h.detach()
                z = h.clone().requires_grad_()
                with torch.enable_grad():
                    for _ in range(3):
                        energy = (z - h).pow(2).sum() + z.abs().sum()
                        grad, = torch.autograd.grad(energy, z)
                        z = (z - 0.1 * grad).detach().requires_grad_()
                return z.detach()

            @staticmethod
            def backward(ctx, grad_out):
                return grad_out

        layer = nn.Linear(4, 4)
        Refine.apply(layer(x)).sum().backward()
        """),
    # every parameter frozen, the head by the branch meant to keep it trainable (AaronComo/LipFD#18)
    "graphless_all_frozen": ("""
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        for name, p in model.named_parameters():
            if name.startswith("0."):
                p.requires_grad = False
            else:
                p.requires_grad = False  # <- autograd_error
        F.cross_entropy(model(x), y).backward()  # <- symptom
        """, """
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        for name, p in model.named_parameters():
            if name.startswith("0."):
                p.requires_grad = False
            else:
                p.requires_grad = True
        F.cross_entropy(model(x), y).backward()
        """),
    # the same after loading weights from another model's state_dict (Ultra-Fast-Lane-Detection#282, b42d_ufld): the
    # freeze, not the copy that carried values from a model the script dropped, is what left the loss without graph
    "graphless_all_frozen_after_a_reload": ("""
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        model.load_state_dict(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).state_dict())
        for p in model.parameters():
            p.requires_grad = False  # <- autograd_error
        F.cross_entropy(model(x), y).backward()  # <- symptom
        """, """
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        model.load_state_dict(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).state_dict())
        for p in model[0].parameters():
            p.requires_grad = False
        F.cross_entropy(model(x), y).backward()
        """),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_autograd_error_is_found_at_the_line_to_change(snippet, name, one_torch_thread):
    buggy, _ = CASES[name]
    script, t, error = traced(snippet, buggy)
    assert error is not None, "the bug script should raise"
    found = [f for f in t.findings if f.kind == "autograd_error"]
    assert [(f.severity, f.line) for f in found] == [("error", script.line("autograd_error"))], \
        [(f.kind, f.severity, f.line, f.message) for f in t.findings]
    finding = found[0]
    assert finding.file == str(script.path) and finding.code and finding.message and finding.fix
    symptom = [place.line for place in finding.related if place.role == "symptom"]
    assert symptom == ([script.line("symptom")] if "symptom" in script.marks else [])
    notes = getattr(error, "__notes__", [])
    assert name in ("graphless", "gradient_shape", "raised_inside") or \
        any(note.startswith(f"gradcheck-l2c: {script.path.name}:{script.line('autograd_error')}: ") for note in notes)


@pytest.mark.parametrize("name", sorted(CASES))
def test_corrected_twin_runs_silent(snippet, name, one_torch_thread):
    _, fixed = CASES[name]
    _, t, error = traced(snippet, fixed)
    assert error is None, repr(error)
    assert [f for f in t.findings if f.severity in ("error", "warning")] == []


def test_a_caught_refusal_still_gets_its_finding_and_the_summary_does_not_say_all_got_a_gradient(snippet):
    script, t, error = traced(snippet, """
    cell = nn.RNNCell(4, 6)
    head = nn.Linear(6, 3)
    h = torch.zeros(8, 6)
    for step in range(3):
        h = cell(x, h)  # <- autograd_error
        loss = F.cross_entropy(head(h), y)
        try:
            loss.backward()  # <- symptom
        except RuntimeError as caught:
            print("skipped a step:", caught)
    """)
    assert error is None
    found = [f for f in t.findings if f.kind == "autograd_error"]
    assert [(f.line, f.count) for f in found] == [(script.line("autograd_error"), 2)]
    summary = summary_line(t.findings, t.watched)
    assert "no findings" not in summary and "1 error" in summary
    assert "backward through the graph a second time" in format_report(t.findings, t.watched)


def test_the_fix_fits_the_category(snippet):
    cases = {"freed_carried": ".detach()", "freed_module_memory": "store .detach()", "non_scalar_root": ".mean()", "inplace_leaf": "torch.no_grad()",
             "inference_saved": "torch.no_grad() instead of torch.inference_mode()",
             "function_backward": "one value per input of forward", "deepcopy_non_leaf": ".detach()",
             "unused_input": "allow_unused=True", "input_no_grad": "requires_grad",
             "function_no_backward": "backward(ctx, *grads)", "numpy_requires_grad": ".item()",
             "hook_no_grad": "requires_grad", "inplace_multi_view": "out of place",
             "retain_grad_no_grad": "if t.requires_grad", "hook_result": "slot by slot",
             "unused_input_deepcopy": "functional_call"}
    for name, words in cases.items():
        _, t, _ = traced(snippet, CASES[name][0])
        (finding,) = [f for f in t.findings if f.kind == "autograd_error"]
        assert words in finding.fix, (name, finding.fix)
        assert 'PyTorch: "' in finding.message, finding.message


def test_an_in_place_write_into_a_saved_tensor_the_trace_did_not_see_is_still_reported(snippet):
    script, t, error = traced(snippet, """
    w = torch.randn(4, requires_grad=True)
    out = w.exp()
    with torch.no_grad():
        out.add_(1)
    out.sum().backward()  # <- autograd_error
    """)
    assert error is not None and "modified by an inplace operation" in str(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == \
        [("autograd_error", script.line("autograd_error"))]


def test_refusals_another_finding_explains_are_not_repeated(snippet):
    """The in-place write that made a saved tensor stale is `inplace_saved`'s; a loss cut off by `.item()`
    is the cut's: no `autograd_error` beside them."""
    _, t, error = traced(snippet, """
    w = torch.randn(4, requires_grad=True)
    out = w.exp()
    out.add_(1)
    out.sum().backward()
    """)
    assert error is not None
    assert {f.kind for f in t.findings if f.severity == "error"} == {"inplace_saved"}
    _, t, error = traced(snippet, """
    model = nn.Linear(4, 3)
    loss = torch.tensor(F.cross_entropy(model(x), y).item())
    loss.backward()
    """)
    assert error is not None
    assert "autograd_error" not in {f.kind for f in t.findings}


def test_a_cache_made_under_inference_mode_and_sliced_later_is_named_where_it_was_made(snippet):
    script, t, error = traced(snippet, """
    class Rotary(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj, self.cache = nn.Linear(4, 4), None

        def forward(self, h):
            if self.cache is None:
                self.cache = torch.arange(8.0).repeat(4, 1).T.cos()  # <- autograd_error
            return self.proj(h) * self.cache[: h.size(0)]

    @torch.inference_mode()
    def evaluate(model):
        return model(x)

    model = Rotary()
    evaluate(model)
    model(x).sum().backward()
    """)
    assert error is not None and "Inference tensors" in str(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == \
        [("autograd_error", script.line("autograd_error"))]


INPLACE_LAYERS = {
    # the layer's constructor asks for in-place writes: its line is the one to change
    "built": ("""
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.skip, self.out = nn.Linear(4, 4), nn.Linear(4, 3)
                self.act = nn.LeakyReLU(0.1, inplace={flag})  # <- inplace_saved

            def forward(self, inputs):
                h = self.skip(inputs)
                energy = h.pow(2).sum(1, keepdim=True)
                return self.out(self.act(h)) + energy

        F.cross_entropy(Block()(x), y).backward()  # <- symptom
        """),
    # user code switches a built layer to in-place writes afterwards
    "switched": ("""
        model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Dropout(0.2), nn.Linear(4, 3))
        for layer in model:
            if isinstance(layer, nn.Dropout):
                layer.inplace = {flag}  # <- inplace_saved
        F.cross_entropy(model(x), y).backward()  # <- symptom
        """),
}


@pytest.mark.parametrize("name", sorted(INPLACE_LAYERS))
def test_a_layer_made_to_write_in_place_is_named_where_it_was_made_so(snippet, name, one_torch_thread):
    """`nn.ReLU(inplace=True)` and its kin overwrite a tensor another op saved: the line that made the layer
    write in place is the one to change (the forward line that runs it is not); with inplace off, silence."""
    script, t, error = traced(snippet, INPLACE_LAYERS[name].replace("{flag}", "True"))
    assert error is not None and "modified by an inplace operation" in str(error)
    found = [(f.kind, f.line) for f in t.findings if f.severity == "error"]
    assert found == [("inplace_saved", script.line("inplace_saved"))], found
    (finding,) = [f for f in t.findings if f.severity == "error"]
    assert "inplace=False" in finding.fix
    assert [place.line for place in finding.related if place.role == "symptom"] == [script.line("symptom")]
    _, t, error = traced(snippet, INPLACE_LAYERS[name].replace("{flag}", "False"))
    assert error is None and [f for f in t.findings if f.severity in ("error", "warning")] == []


def test_an_indexed_write_into_a_tensor_a_later_op_saved_is_named_at_the_write(snippet):
    """A row assigned in place (``h[i] = ...``) after an op saved ``h``: autograd's message names the saved
    tensor as CopySlices' output; the write is still the one named."""
    script, t, error = traced(snippet, """
    w = torch.randn(4, 4, requires_grad=True)
    h = torch.mm(w, x.T)
    total = 0
    for i in range(2):
        h[i] = h[i] * 2  # <- inplace_saved
        total = total + torch.mm(w, h).sum()
    total.backward()
    """)
    assert error is not None and "modified by an inplace operation" in str(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == \
        [("inplace_saved", script.line("inplace_saved"))]


def test_a_module_called_twice_on_an_input_it_masks_in_place_is_named_at_that_write(snippet):
    """An encoder masks its input in place, then normalises a view of it (which saves the view); called twice on
    one input, its second mask makes the first call's saved view stale. A later write of the same shape and
    version into another tensor (the output masked again) is not the one: the write into the saved tensor is."""
    script, t, error = traced(snippet, """
    mask = (torch.arange(5) < 3).float().view(1, 5, 1)
    norm = nn.LayerNorm(4)

    def encode(seqs):
        seqs *= mask  # <- inplace_saved
        out = norm(seqs.transpose(0, 1)).transpose(0, 1) * 2.0
        out += 1.0
        out *= mask
        return out

    emb = torch.randn(2, 5, 4, requires_grad=True) * 1.0
    loss = encode(emb).sum() + encode(emb).sum()
    loss.backward()
    """)
    assert error is not None and "modified by an inplace operation" in str(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == \
        [("inplace_saved", script.line("inplace_saved"))]


def test_a_write_into_the_output_a_relu_saved_is_named_beside_a_later_in_place_layer(snippet):
    """``+=`` into a ReLU's output (which it saved), then a ``ReLU(inplace=True)`` after a norm layer, harmless, that
    leaves a tensor of the same shape at the same version: the write into the tensor the ReLU saved is the one
    (SOTR's mask head)."""
    script, t, error = traced(snippet, """
    level0 = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
    level1 = nn.Linear(4, 6)
    pred = nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6), nn.ReLU(inplace=True))
    feature = level0(x)
    feature += level1(x)  # <- inplace_saved
    loss = pred(feature).sum()
    loss.backward()
    """)
    assert error is not None and "modified by an inplace operation" in str(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == \
        [("inplace_saved", script.line("inplace_saved"))]


def test_computed_weights_loaded_into_a_model_the_graph_saved_are_named_at_the_load(snippet):
    """Weights computed with a graph and copied in by load_state_dict, then replaced again before backward:
    the copy of computed weights is the cut the backward was meant to differentiate through."""
    script, t, error = traced(snippet, """
    net = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 3))
    meta_optimizer = torch.optim.SGD(net.parameters(), lr=1e-3)
    kept = {k: v.clone() for k, v in net.state_dict().items()}
    grads = torch.autograd.grad(F.cross_entropy(net(x), y), list(net.parameters()), create_graph=True)
    fast = {name: p - 0.1 * g for (name, p), g in zip(net.named_parameters(), grads)}
    net.load_state_dict(fast)  # <- state_dict_reload
    query = F.cross_entropy(net(x), y)
    net.load_state_dict(kept)
    query.backward()
    meta_optimizer.step()
    """)
    assert error is not None and "modified by an inplace operation" in str(error)
    assert {f.line for f in t.findings if f.kind == "state_dict_reload" and f.severity == "error"} == \
        {script.line("state_dict_reload")}


def test_an_in_place_write_into_an_inference_tensor_runs_as_without_the_trace(snippet):
    """Inference tensors have no version counter (reading it raises): the trace must not read it, or a script that
    fills one in place under enable_grad inside inference_mode would stop with the trace's error, not its own."""
    _, t, error = traced(snippet, """
    with torch.inference_mode():
        with torch.enable_grad():
            noise = torch.empty_like(x).uniform_(-1, 1)
            noise.add_(1)
    print(noise.sum().item())
    """)
    assert error is None, repr(error)
    assert [f for f in t.findings if f.severity in ("error", "warning")] == []


def test_a_step_that_never_ran_because_its_backward_was_refused_is_not_reported_again(snippet):
    """A GAN whose discriminator step reuses a fake whose graph the generator's backward freed: the refused
    backward is the finding; the discriminator's step() after it never ran for that reason alone."""
    script, t, error = traced(snippet, """
    G, D = nn.Linear(4, 4), nn.Linear(4, 1)
    opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    for step in range(2):
        fake = G(x)
        D(fake).mean().backward()
        opt_g.step()
        G.zero_grad()
    (D(x).mean() - D(fake).mean()).backward()
    opt_d.step()  # <- step
    """)
    assert error is not None
    loud = [f for f in t.findings if f.severity in ("error", "warning")]
    assert [f.kind for f in loud] == ["autograd_error"] and script.line("step") not in {f.line for f in loud}


CYCLE = """
G_x, G_y = (nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4)) for _ in range(2))
D_x, D_y = nn.Linear(4, 1), nn.Linear(4, 1)
opt_g = torch.optim.Adam([*G_x.parameters(), *G_y.parameters()])
opt_d = torch.optim.Adam([*D_x.parameters(), *D_y.parameters()])
for step in range(2):
    opt_g.zero_grad()
    fake_y = G_x(x)
    (-D_x(fake_y).mean()).backward(retain_graph=True)
    opt_g.step()
    fake_x = G_y(x)
    (-D_y(fake_x).mean()).backward(retain_graph=True)
    opt_g.step()
    opt_d.zero_grad()
    (D_x(x).mean() - D_x(FAKE_Y).mean()).backward()
    STEP
    opt_d.zero_grad()
    (D_y(x).mean() - D_y(FAKE_X).mean()).backward()
    STEP
"""


def test_an_optimizer_whose_only_step_follows_a_refused_backward_is_not_called_stepless(snippet):
    """CycleGAN (b16c_simple_cyclegan_fake_not_detached_for_d): the generators' backwards give the discriminator
    gradients too, then its own backward, through a fake whose generator a step has changed since, is refused in
    the first iteration. Its optimizer never stepped because the script stopped there: the refusal is the finding.
    Without the refusal, a discriminator whose step is missing is still named."""
    script, t, error = traced(snippet, CYCLE.replace("FAKE_Y", "fake_y").replace("FAKE_X", "fake_x").replace("STEP", "opt_d.step()"))
    assert error is not None
    assert [f.kind for f in t.findings if f.severity in ("error", "warning")] == ["inplace_saved"], \
        [(f.kind, f.line, f.message) for f in t.findings]
    script, t, error = traced(snippet, CYCLE.replace("FAKE_Y", "fake_y.detach()").replace("FAKE_X", "fake_x.detach()").replace("STEP", "pass"))
    assert error is None
    (stepless,) = [f for f in t.findings if f.severity in ("error", "warning")]
    assert stepless.tensor.startswith("D_x.bias, D_x.weight") and "never calls its step()" in stepless.message, \
        stepless.message


def test_a_backward_from_a_leaf_under_inference_mode_or_no_grad_runs_as_without_the_trace(snippet):
    """cog (b17c_cog_predict_inference_mode_decorator): a loss computed under ``@torch.inference_mode()`` and made a
    leaf with ``requires_grad_(True)`` backpropagates into itself alone, as does a leaf's backward under no_grad. The
    trace found a leaf root's accumulator through a view, which neither mode records, and broke both scripts."""
    script, t, error = traced(snippet, """
    model = nn.Linear(4, 3)

    @torch.inference_mode()
    def train():
        loss = F.cross_entropy(model(x), y)  # <- no_grad
        loss.requires_grad_(True)
        loss.backward()
        return loss.grad

    assert train() == 1 and model.weight.grad is None
    leaf = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        leaf.backward(torch.full((2,), 3.0))
    assert leaf.grad.tolist() == [3.0, 3.0]
    """)
    assert error is None, repr(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == [("no_grad", script.line("no_grad"))] * 2


@pytest.mark.parametrize("second", ["same shape", "other shape"])
def test_of_several_writes_into_saved_tensors_the_one_the_engine_met_is_named(snippet, second):
    """Two layers' ReLU outputs, each divided in place (EfficientDet's BiFPN weights, UNet's residual `x += skip`):
    both saved tensors are stale, and backward fails at the later one, whose shape PyTorch's message gives; of two
    of one shape, the later made (the engine runs the newest node first). That write is named, not the first."""
    shape = "3, 4" if second == "same shape" else "4, 4"
    script, t, error = traced(snippet, f"""
    w1 = nn.Parameter(torch.rand(3, 4))
    w2 = nn.Parameter(torch.rand({shape}))
    a = torch.relu(w1)
    a /= a.sum(0) + 1e-4
    b = torch.relu(w2)
    b /= b.sum(0) + 1e-4  # <- inplace_saved
    (b.sum() + a.sum()).backward()
    """)
    assert error is not None and "modified by an inplace operation" in str(error)
    assert [(f.kind, f.line) for f in t.findings if f.severity == "error"] == \
        [("inplace_saved", script.line("inplace_saved"))]


def test_an_error_the_tool_fails_to_explain_says_so_and_propagates_unchanged(snippet, monkeypatch, one_torch_thread):
    """The tool's own failure while it explains autograd's error is told on that error (not lost without a word);
    the script's error, its type and message, is what propagates."""
    from gradcheck_l2c.record.autograd_errors import ErrorRecorder

    def broken(*_args, **_kwargs):
        raise KeyError("stack frame")

    monkeypatch.setattr(ErrorRecorder, "op", broken)
    script, t, error = traced(snippet, """
        w = torch.randn(4, 3, requires_grad=True)
        w += 1  # a leaf that requires grad written in place: autograd refuses
    """)
    assert isinstance(error, RuntimeError) and "leaf Variable that requires grad" in str(error)
    assert getattr(error, "__notes__", []) == [
        "gradcheck-l2c: could not explain this error (the tool's own KeyError: 'stack frame'); "
        "please report it with this traceback"]
