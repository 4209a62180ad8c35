# torch版本seq2seq训练优化器输入是否有bug (Is the optimizer input in the torch seq2seq training buggy?)
# https://github.com/zhaoyingjun/chatbot/issues/115
# What went wrong: chineseChatbotWeb-pytorch/seq2seqChatbot/execute.py, train(), passed the encoder's
# parameters to BOTH optimizers of seq2seqModel.train_step(...): the "decoder_optimizer" was
# optim.SGD(encoder1.parameters()). The attention decoder (embedding, attn, attn_combine, gru, out)
# got gradients every step but was in no optimizer, so it never changed (and the encoder was stepped twice).
# Fix (maintainer confirmed, "嗯 是的 感谢提出来"): the last argument must be optim.SGD(attn_decoder1.parameters(), lr=0.001).
import random
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

torch.manual_seed(0)
random.seed(0)
device = torch.device("cpu")

# ---- seq2seqModel.py ------------------------------------------------------------------------
SOS_token = 0
EOS_token = 1
MAX_LENGTH = 12
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
        output = embedded
        output, hidden = self.gru(output, hidden)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, 1, self.hidden_size, device=device)


class AttentionDencoder(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=MAX_LENGTH):
        super(AttentionDencoder, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.dropout_p = dropout_p
        self.max_length = max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


def train_step(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer):
    encoder_hidden = encoder.initHidden()
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    input_length = input_tensor.size(0)
    target_length = target_tensor.size(0)
    encoder_outputs = torch.zeros(MAX_LENGTH, encoder.hidden_size, device=device)
    loss = 0
    for ei in range(0, input_length - 1):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0, 0]

    decoder_input = torch.tensor([[SOS_token]], device=device)
    decoder_hidden = encoder_hidden
    use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False

    if use_teacher_forcing:
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(
                decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(F.log_softmax(decoder_output, dim=1), target_tensor[di])
            decoder_input = target_tensor[di]  # Teacher forcing
    else:
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(
                decoder_input, decoder_hidden, encoder_outputs)
            topv, topi = decoder_output.topk(1)
            decoder_input = topi.squeeze().detach()  # detach from history as input
            loss += criterion(F.log_softmax(decoder_output, dim=1), target_tensor[di])
            if decoder_input.item() == EOS_token:
                break

    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / target_length


# ---- execute.py -------------------------------------------------------------------------------
hidden_size = 16
input_n_words, target_n_words = 20, 20
max_data = 9
# tensorFromSentence(...) outputs: (len, 1) long tensors ending with EOS
input_tensor = [torch.cat([torch.randint(2, input_n_words, (6, 1)), torch.tensor([[EOS_token]])]) for _ in range(max_data)]
target_tensor = [torch.cat([torch.randint(2, target_n_words, (5, 1)), torch.tensor([[EOS_token]])]) for _ in range(max_data)]


def train():
    encoder1 = Encoder(input_n_words, hidden_size).to(device)
    attn_decoder1 = AttentionDencoder(hidden_size, target_n_words, dropout_p=0.1).to(device)
    out_weight_before = attn_decoder1.out.weight.clone()
    for epoch in range(2):
        total_loss = 0
        for i in range(0, max_data - 1):
            inp = input_tensor[i]
            targ = target_tensor[i]
            batch_loss = train_step(inp, targ, encoder1, attn_decoder1, optim.SGD(encoder1.parameters(), lr=0.001), optim.SGD(attn_decoder1.parameters(), lr=0.001))
            total_loss += batch_loss
        print('epoch {} loss {:.4f}'.format(epoch, total_loss / (max_data - 1)))
    print("decoder out.weight change:", (attn_decoder1.out.weight - out_weight_before).abs().max().item())


train()
