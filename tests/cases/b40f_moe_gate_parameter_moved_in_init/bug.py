"""davidmrau/mixture-of-experts#12, "Issue with gates parameters",
https://github.com/davidmrau/mixture-of-experts/issues/12: the sparsely-gated MoE layer created its gating
weights as
    self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True).to(self.device)
    self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True).to(self.device)
The reporter (elias-ramzi): ".to(self.device) to a nn.Parameter returns a nn.Tensor, so the weights are not
learned during training ... this prohibited learning the MoE for me". The copy is a non-leaf tensor kept as a
plain attribute: it is not in model.parameters(), the optimizer never holds it, and the gate stays at zero.
Fix (the thread's): drop the .to(self.device) (the module is moved as a whole later) or build the zeros on
the device and wrap that. A dtype change stands in for the move to the GPU (this machine has none; .to() to
the device a tensor is already on returns the tensor itself). Expert dispatch is written densely here."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, input_size, output_size, hidden_size):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, output_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class MoE(nn.Module):
    def __init__(self, input_size, output_size, num_experts, hidden_size, device, dtype, noisy_gating=True, k=2):
        super(MoE, self).__init__()
        self.noisy_gating = noisy_gating
        self.num_experts = num_experts
        self.k = k
        self.device, self.dtype = device, dtype
        self.experts = nn.ModuleList([MLP(input_size, output_size, hidden_size) for i in range(num_experts)])
        self.w_gate = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True).to(self.device, self.dtype)  # <- non_parameter_tensor
        self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True).to(self.device, self.dtype)  # <- non_parameter_tensor
        self.softplus = nn.Softplus()
        self.softmax = nn.Softmax(1)

    def cv_squared(self, x):
        eps = 1e-10
        return x.var() / (x.mean() ** 2 + eps)

    def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
        clean_logits = x @ self.w_gate
        if self.noisy_gating and train:
            raw_noise_stddev = x @ self.w_noise
            noise_stddev = self.softplus(raw_noise_stddev) + noise_epsilon
            logits = clean_logits + torch.randn_like(clean_logits) * noise_stddev
        else:
            logits = clean_logits
        top_logits, top_indices = logits.topk(self.k, dim=1)
        top_k_gates = self.softmax(top_logits)
        zeros = torch.zeros_like(logits, requires_grad=True)
        return zeros.scatter(1, top_indices, top_k_gates)

    def forward(self, x, loss_coef=1e-2):
        gates = self.noisy_top_k_gating(x, self.training)
        importance = gates.sum(0)
        aux_loss = loss_coef * self.cv_squared(importance)
        expert_outputs = torch.stack([expert(x) for expert in self.experts], 1)  # [batch, experts, out]
        y = (gates.unsqueeze(-1) * expert_outputs).sum(1)
        return y, aux_loss


dtype = torch.float64
model = MoE(input_size=10, output_size=3, num_experts=4, hidden_size=16, device="cpu", dtype=dtype).to(dtype)
print("parameters:", [name for name, _ in model.named_parameters() if not name.startswith("experts")])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(256, 10, dtype=dtype)
target = torch.randint(0, 3, (256,))
for step in range(50):
    y, aux_loss = model(x)
    loss = nn.functional.cross_entropy(y, target) + aux_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; |w_gate| after training: {model.w_gate.abs().sum().item():.4f}")
