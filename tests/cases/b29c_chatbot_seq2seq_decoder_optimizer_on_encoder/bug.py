"""zhaoyingjun/chatbot#115 "torch版本seq2seq训练优化器输入是否有bug",
https://github.com/zhaoyingjun/chatbot/issues/115: in chineseChatbotWeb-pytorch/seq2seqChatbot/execute.py the
training loop calls seq2seqModel.train_step(inp, targ, encoder1, attn_decoder1, encoder_optimizer,
decoder_optimizer) and builds both optimizers inline, but the last one is optim.SGD(encoder1.parameters(), ...)
as well. train_step runs the GRU encoder, the attention decoder with teacher forcing, loss.backward(), then
encoder_optimizer.step() and decoder_optimizer.step(): the encoder is stepped twice, the attention decoder
(embedding, attn, attn_combine, gru, out) gets gradients that no optimizer ever applies, so it never learns.
The reporter: the last argument should be optim.SGD(attn_decoder1.parameters(), lr=0.001); the maintainer
agreed ("嗯 是的 感谢提出来") and fixed it. Data and sizes are shrunk; the vocabulary is random token ids."""
import random
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

torch.manual_seed(0)
random.seed(0)
device = torch.device("cpu")
SOS_token, EOS_token, MAX_LENGTH = 0, 1, 10
teacher_forcing_ratio = 0.5
criterion = nn.NLLLoss()


class Encoder(nn.Module):
    def __init__(self, input_size, hidden_size):
        super(Encoder, self).__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        output, hidden = self.gru(embedded, hidden)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, 1, self.hidden_size, device=device)


class AttentionDencoder(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=MAX_LENGTH):
        super(AttentionDencoder, self).__init__()
        self.hidden_size, self.output_size, self.max_length = hidden_size, output_size, max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input).view(1, 1, -1))
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = F.relu(self.attn_combine(output).unsqueeze(0))
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


def train_step(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer):
    encoder_hidden = encoder.initHidden()
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    encoder_outputs = torch.zeros(MAX_LENGTH, encoder.hidden_size, device=device)
    loss = 0
    for ei in range(0, input_tensor.size(0) - 1):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0, 0]
    decoder_input = torch.tensor([[SOS_token]], device=device)
    decoder_hidden = encoder_hidden
    use_teacher_forcing = random.random() < teacher_forcing_ratio
    for di in range(target_tensor.size(0)):
        decoder_output, decoder_hidden, _ = decoder(decoder_input, decoder_hidden, encoder_outputs)
        loss += criterion(F.log_softmax(decoder_output, dim=1), target_tensor[di])
        if use_teacher_forcing:
            decoder_input = target_tensor[di]  # Teacher forcing
        else:
            decoder_input = decoder_output.topk(1)[1].squeeze().detach()
    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / target_tensor.size(0)


n_words, hidden_size = 12, 16
pairs = [(torch.randint(2, n_words, (6, 1)), torch.randint(2, n_words, (5, 1))) for _ in range(4)]
encoder1 = Encoder(n_words, hidden_size).to(device)
attn_decoder1 = AttentionDencoder(hidden_size, n_words, dropout_p=0.1).to(device)
enc_before = encoder1.embedding.weight.detach().clone()
dec_before = attn_decoder1.out.weight.detach().clone()

for epoch in range(2):
    for inp, targ in pairs:
        batch_loss = train_step(inp, targ, encoder1, attn_decoder1, optim.SGD(encoder1.parameters(), lr=0.001), optim.SGD(encoder1.parameters(), lr=0.001))  # <- optimizer

print("decoder out.weight grad is None:", attn_decoder1.out.weight.grad is None)
print("encoder embedding changed:", not torch.equal(enc_before, encoder1.embedding.weight))
print("decoder out.weight changed:", not torch.equal(dec_before, attn_decoder1.out.weight))
