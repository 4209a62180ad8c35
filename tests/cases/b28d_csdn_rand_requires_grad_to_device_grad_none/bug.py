"""CSDN blog (mirror blog.youkuaiyun.com) "Pytorch反向传播梯度始终为None", fengyu7789, article 123215466:
https://blog.youkuaiyun.com/fengyu7789/article/details/123215466
The author builds the weight as `w = torch.rand(3, 1, requires_grad=True).to(device)` and after `t.backward()`
`print(w.grad)` shows None. The post's diagnosis: the `.to(device)` on the tensor that requires grad changed the
leaf ("导致叶节点发生变化"): `w` is the copy `.to()` returned, a non-leaf, and the gradient went to the unnamed CPU leaf
behind it; in a training loop the parameter never gets updated ("参数得不到更新"). The post's fix: create the tensor
on the device directly, `torch.rand(3, 1, requires_grad=True, device=device)`.
The author ran with device = cuda, where `.to(device)` copies; this CPU script writes `.to(device, copy=True)` so the
call returns the same kind of copy (a non-leaf) as the reporter's CPU->GPU move did."""
import torch

device = torch.device("cpu")  # the reporter: torch.device('cuda' if torch.cuda.is_available() else 'cpu')
torch.manual_seed(123)
x = torch.rand(10, 3).to(device)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]], device=device)
w = torch.rand(3, 1, requires_grad=True).to(device, copy=True)  # <- non_leaf_watched
w_start = w.detach().clone()
lr = 0.5

for step in range(5):
    t = ((x @ w - y) ** 2).mean()
    t.backward()
    print("step", step, "loss", round(t.item(), 4), "w.grad:", w.grad)
    if w.grad is not None:
        with torch.no_grad():
            w -= lr * w.grad
            w.grad.zero_()

print("w changed:", not torch.equal(w.detach(), w_start))
