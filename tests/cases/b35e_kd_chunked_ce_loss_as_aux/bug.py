# Chunked fused-linear top-k KD loss (student lm_head + teacher top-k logprobs).
# The per-chunk gradients are computed eagerly with torch.func.grad_and_value
# inside a custom autograd.Function and handed back in backward().
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def distillation_loss_fn(student_logits_temp_scaled, target_token_ids_chunk, target_logprobs_chunk, target_mask_chunk):
    student_logits_topk = torch.gather(student_logits_temp_scaled, dim=-1, index=target_token_ids_chunk)
    student_lse = torch.logsumexp(student_logits_temp_scaled, dim=-1, keepdim=True)
    student_logprobs_topk = student_logits_topk - student_lse
    valid_mask = target_mask_chunk.to(torch.bool)
    s = student_logprobs_topk[valid_mask]
    t = target_logprobs_chunk[valid_mask]
    return (t.exp() * (t - s)).sum()  # forward KL(teacher || student)


def compute_loss_kl_topk(student_input_chunk, student_weight, target_token_ids_chunk, target_logprobs_chunk,
                         target_mask_chunk, target_chunk, weight_hard_loss, weight_soft_loss, temperature):
    student_logits_chunk = F.linear(student_input_chunk, student_weight)
    ce_loss = torch.tensor(0.0)
    if weight_hard_loss > 0.0:
        ce_loss = F.cross_entropy(student_logits_chunk, target_chunk, reduction="sum", ignore_index=-100)
    soft_loss = torch.tensor(0.0)
    if weight_soft_loss > 0.0:
        soft_loss = distillation_loss_fn(student_logits_chunk / temperature, target_token_ids_chunk,
                                         target_logprobs_chunk, target_mask_chunk)
    return soft_loss, ce_loss  # <- cut_term


class FusedLinearKLTopKLogprobFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, student_input, lm_head_weight, target_token_ids, target_logprobs, target_mask, true_labels,
                weight_hard_loss, weight_soft_loss, temperature, chunk_size):
        grad_weight_acc = torch.zeros_like(lm_head_weight)
        grad_inputs_list = []
        kd_loss_acc = torch.zeros(())
        ce_loss_acc = torch.zeros(())

        def loss_fn_for_grad(x_chunk, w, ids_chunk, lp_chunk, mask_chunk, y_chunk):
            return compute_loss_kl_topk(x_chunk, w, ids_chunk, lp_chunk, mask_chunk, y_chunk,
                                        weight_hard_loss, weight_soft_loss, temperature)

        num_chunks = max(1, student_input.shape[0] // chunk_size)
        for x_c, ids_c, lp_c, m_c, y_c in zip(torch.chunk(student_input, num_chunks), torch.chunk(target_token_ids, num_chunks),
                                              torch.chunk(target_logprobs, num_chunks), torch.chunk(target_mask, num_chunks),
                                              torch.chunk(true_labels, num_chunks)):
            (chunk_grad_input, chunk_grad_weight), (chunk_kd_loss, chunk_ce_loss) = torch.func.grad_and_value(
                loss_fn_for_grad, argnums=(0, 1), has_aux=True)(x_c, lm_head_weight, ids_c, lp_c, m_c, y_c)
            grad_weight_acc.add_(chunk_grad_weight)
            kd_loss_acc.add_(chunk_kd_loss)
            ce_loss_acc.add_(chunk_ce_loss)
            grad_inputs_list.append(chunk_grad_input)

        ctx.save_for_backward(torch.cat(grad_inputs_list, dim=0), grad_weight_acc)
        kd_loss_acc = kd_loss_acc * (temperature ** 2)
        return weight_soft_loss * kd_loss_acc + weight_hard_loss * ce_loss_acc

    @staticmethod
    def backward(ctx, grad_output):
        grad_input, grad_weight = ctx.saved_tensors
        return grad_input * grad_output, grad_weight * grad_output, None, None, None, None, None, None, None, None


V, D, N, K = 32, 16, 64, 4
body = nn.Sequential(nn.Linear(8, D), nn.Tanh())
lm_head = nn.Linear(D, V, bias=False)
teacher = nn.Linear(8, V)
x = torch.randn(N, 8)
labels = torch.randint(0, V, (N,))
with torch.no_grad():
    t_logprobs, t_ids = torch.log_softmax(teacher(x) / 2.0, dim=-1).topk(K, dim=-1)
    t_logprobs = t_logprobs - torch.logsumexp(t_logprobs, dim=-1, keepdim=True)
t_mask = torch.ones(N, K)


def kd_loss(weight_hard_loss, weight_soft_loss):
    return FusedLinearKLTopKLogprobFunction.apply(body(x), lm_head.weight, t_ids, t_logprobs, t_mask, labels,
                                                  weight_hard_loss, weight_soft_loss, 2.0, 16)


optimizer = torch.optim.SGD(list(body.parameters()) + list(lm_head.parameters()), lr=1e-3)
for step in range(3):
    optimizer.zero_grad()
    loss = kd_loss(weight_hard_loss=0.5, weight_soft_loss=0.5)
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))

# same inputs, only the hard-loss weight changes: the lm_head gradient should change with it
grads = []
for w_hard in (0.0, 0.5):
    lm_head.weight.grad = None
    kd_loss(weight_hard_loss=w_hard, weight_soft_loss=0.5).backward()
    grads.append(lm_head.weight.grad.clone())
print("CE term reaches lm_head grad:", not torch.allclose(grads[0], grads[1]))
