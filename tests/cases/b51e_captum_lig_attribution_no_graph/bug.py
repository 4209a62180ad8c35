# Backprop through `LayerIntegratedGradients` attributions
# https://github.com/meta-pytorch/captum/issues/762
# The reporter regularizes a model with an attribution-based loss (attribution priors). With
# IntegratedGradients (w.r.t. the input) the attributions have a grad_fn; with LayerIntegratedGradients
# (w.r.t. an inner layer) they have none, so the attribution loss cannot be backpropagated to the model.
# Maintainer's fix: in LayerIntegratedGradients._gradient_func the call
#   grads = torch.autograd.grad(torch.unbind(output), inputs)
# must pass create_graph=True (later exposed as grad_kwargs, captum PR #1435).
# Captum's code path is rewritten below in plain torch, keeping its class/function names.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- captum/_utils/gradient.py (reduced) ------------------------------------------------------
def _run_forward(forward_func, inputs, target=None, additional_forward_args=None):
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    args = inputs + (additional_forward_args if additional_forward_args is not None else ())
    output = forward_func(*args)
    if target is None:
        return output
    return output[torch.arange(output.shape[0]), target]


def _forward_layer_eval(forward_func, inputs, layer, additional_forward_args=None, grad_enabled=False):
    saved = []

    def forward_hook(module, hook_inputs, hook_outputs):
        saved.append(hook_outputs)

    handle = layer.register_forward_hook(forward_hook)
    with torch.autograd.set_grad_enabled(grad_enabled):
        _run_forward(forward_func, inputs, additional_forward_args=additional_forward_args)
    handle.remove()
    return (saved[0],)


# ---- captum/attr/_core/integrated_gradients.py (reduced, riemann_trapezoid) -------------------
class IntegratedGradients:
    def __init__(self, forward_func, multiply_by_inputs=True):
        self.forward_func = forward_func
        self.gradient_func = None
        self.multiplies_by_inputs = multiply_by_inputs

    def attribute(self, inputs, baselines, target, additional_forward_args, n_steps=8):
        alphas = [i / (n_steps - 1) for i in range(n_steps)]
        step_sizes = [1.0 / (n_steps - 1)] * n_steps
        step_sizes[0] = step_sizes[-1] = 0.5 / (n_steps - 1)
        scaled_features_tpl = tuple(
            torch.cat([baseline + alpha * (inp - baseline) for alpha in alphas], dim=0).requires_grad_()
            for inp, baseline in zip(inputs, baselines)
        )
        expanded_target = target.repeat(n_steps)
        input_additional_args = tuple(arg.repeat(n_steps, *([1] * (arg.dim() - 1))) for arg in additional_forward_args)
        grads = self.gradient_func(self.forward_func, scaled_features_tpl, expanded_target, input_additional_args)
        step_t = torch.tensor(step_sizes).view(n_steps, 1)
        total_grads = tuple(
            (grad.contiguous().view(n_steps, -1) * step_t).sum(0).view(inp.shape)
            for grad, inp in zip(grads, inputs)
        )
        if self.multiplies_by_inputs:
            return tuple(tg * (inp - base) for tg, inp, base in zip(total_grads, inputs, baselines))
        return total_grads


# ---- captum/attr/_core/layer/layer_integrated_gradients.py (reduced) --------------------------
class LayerIntegratedGradients:
    def __init__(self, forward_func, layer, multiply_by_inputs=True):
        self.forward_func = forward_func
        self.layer = layer
        self.ig = IntegratedGradients(forward_func, multiply_by_inputs)

    def _make_gradient_func(self):
        def _gradient_func(forward_fn, inputs, target_ind=None, additional_forward_args=None):
            with torch.autograd.set_grad_enabled(True):

                def layer_forward_hook(module, hook_inputs, hook_outputs=None):
                    return inputs[0]

                hook = self.layer.register_forward_hook(layer_forward_hook)
                try:
                    output = _run_forward(self.forward_func, (), target_ind, additional_forward_args)
                finally:
                    hook.remove()
                grads = torch.autograd.grad(torch.unbind(output), inputs)  # <- grad_no_graph
            return grads

        return _gradient_func

    def attribute(self, inputs, baselines, target=None, n_steps=8):
        inputs_layer = _forward_layer_eval(self.forward_func, inputs, self.layer)
        baselines_layer = _forward_layer_eval(self.forward_func, baselines, self.layer)
        self.ig.gradient_func = self._make_gradient_func()
        attributions = self.ig.attribute(
            inputs_layer, baselines=baselines_layer, target=target,
            additional_forward_args=(inputs,), n_steps=n_steps,
        )
        return attributions[0]


# ---- the reporter's model and attribution-regularized training step ---------------------------
class TextClassifier(nn.Module):
    def __init__(self, vocab_size=50, dim=16, num_classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, num_classes)

    def forward(self, input_ids):
        emb = self.embedding(input_ids)
        h = F.relu(self.fc1(emb.mean(dim=1)))
        return self.fc2(h)


model = TextClassifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
lig = LayerIntegratedGradients(model, model.embedding)

input_ids = torch.randint(1, 50, (4, 6))
baseline_ids = torch.zeros_like(input_ids)
labels = torch.randint(0, 2, (4,))

attributions = lig.attribute(input_ids, baselines=baseline_ids, target=labels, n_steps=8)
token_attr = attributions.sum(dim=-1)
attr_loss = token_attr.abs().mean()  # attribution prior on the embedding layer

optimizer.zero_grad()
attr_loss.backward()
optimizer.step()
print("attr_loss:", attr_loss.item())
print("fc2.weight.grad norm:", model.fc2.weight.grad.norm().item())
