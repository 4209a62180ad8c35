"""ubc-vision/sonic issue #2, "got element 0 of tensors does not require grad and does not have a grad_fn",
https://github.com/ubc-vision/sonic/issues/2: SONIC inpaints by optimising the initial noise
`epsilon_optim_target` of a frozen flow/diffusion sampler so that the generated image matches the known pixels
(sonic_inpaint.py, the loss.backward() near L146). Run inside ComfyUI it failed at loss.backward() with
"element 0 of tensors does not require grad and does not have a grad_fn". The maintainers could not reproduce it;
the reporter found that a node of the ComfyUI environment ran everything under a global torch.no_grad(), so the
sampler's forward built no graph back to the noise. Fix (the reporter's): run the function under
torch.inference_mode(False), which turns gradients back on inside the host's no_grad.
Here the host's node runner stands in for ComfyUI; the script raises the RuntimeError."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class TinyVelocityModel(nn.Module):  # stands in for the frozen SD3.5 transformer
    def __init__(self, ch=4):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(ch + 1, 16, 3, padding=1), nn.SiLU(), nn.Conv2d(16, ch, 3, padding=1))

    def forward(self, x, t):
        tt = torch.full_like(x[:, :1], float(t))
        return self.net(torch.cat([x, tt], dim=1))


def pipe(model, latents, num_inference_steps=4):
    x = latents
    dt = 1.0 / num_inference_steps
    for i in range(num_inference_steps):
        x = x - dt * model(x, 1.0 - i * dt)  # Euler step of the flow sampler
    return x


def sonic_inpaint(model, image, mask, step_nums=4, opt_steps=5):
    epsilon_optim_target = torch.randn(1, 4, 8, 8, requires_grad=True)
    optimizer = torch.optim.Adam([epsilon_optim_target], lr=0.05)
    start = epsilon_optim_target.detach().clone()
    for it in range(opt_steps):
        model_final_output = pipe(model, epsilon_optim_target, num_inference_steps=step_nums)
        loss = (((model_final_output - image) * (1 - mask)) ** 2).mean()  # known pixels only
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("noise changed:", not torch.equal(start, epsilon_optim_target.detach()))
    print("final loss:", round(loss.item(), 4))
    return epsilon_optim_target.detach()


def execute_node(fn, *args):  # the host runs each node's function
    with torch.no_grad():  # the environment's global no_grad around node execution
        return fn(*args)  # <- no_grad


model = TinyVelocityModel().eval().requires_grad_(False)
image = torch.randn(1, 4, 8, 8)
mask = torch.zeros(1, 1, 8, 8)
mask[..., 2:6, 2:6] = 1.0  # the hole to inpaint
noise = execute_node(sonic_inpaint, model, image, mask)
print("optimised noise norm:", round(noise.norm().item(), 4))
