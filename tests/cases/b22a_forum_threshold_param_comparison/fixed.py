"""PyTorch Forums thread "If a parameter is trainable in the following case?"
(https://discuss.pytorch.org/t/if-a-parameter-is-trainable-in-the-following-case/149907/2).
The user wants to learn a threshold THRES that selects which elements of A enter the loss
(A[A > THRES].sum()). After backward, A.grad is filled but THRES.grad is None, so THRES never moves.
Why (K. Frank's answer): the comparison A > THRES is not (usefully) differentiable, so autograd does not
backpropagate through it; THRES only enters the loss through the boolean mask.
Fix (the answer's): use a differentiable "soft" threshold, A * (alpha * (A - THRES)).sigmoid()."""
import torch

torch.manual_seed(0)
A = torch.tensor([3., 4., 5., 6.], requires_grad=True)
THRES = torch.tensor([4.], requires_grad=True)
optimizer = torch.optim.SGD([A, THRES], lr=0.1)

before = THRES.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    loss = (A * (2.5 * (A - THRES)).sigmoid()).sum()  # alpha = 2.5: sharpness of the soft step
    loss.backward()
    print(f"step {step} loss={loss.item():.4f} A.grad={A.grad} THRES.grad={THRES.grad}")
    optimizer.step()
print("THRES changed:", not torch.equal(before, THRES.detach()))
