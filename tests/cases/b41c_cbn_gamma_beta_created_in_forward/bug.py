# Conditional Batch Norm (CBN) for VQA: an MLP on the question embedding predicts
# delta_gammas / delta_betas that are added to per-channel gammas / betas.
# The base gammas / betas are (re)initialised inside forward on every call.
import torch
import torch.nn as nn

torch.manual_seed(0)


class CBN(nn.Module):

    def __init__(self, lstm_size, emb_size, out_size, use_betas=True, use_gammas=True, eps=1.0e-5):
        super(CBN, self).__init__()
        self.lstm_size = lstm_size  # size of the lstm emb which is input to MLP
        self.emb_size = emb_size  # size of hidden layer of MLP
        self.out_size = out_size  # output of the MLP - for each channel
        self.use_betas = use_betas
        self.use_gammas = use_gammas
        self.eps = eps

        # MLP used to predict betas and gammas
        self.fc_gamma = nn.Sequential(
            nn.Linear(self.lstm_size, self.emb_size),
            nn.ReLU(inplace=True),
            nn.Linear(self.emb_size, self.out_size),
        )
        self.fc_beta = nn.Sequential(
            nn.Linear(self.lstm_size, self.emb_size),
            nn.ReLU(inplace=True),
            nn.Linear(self.emb_size, self.out_size),
        )
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.constant_(m.bias, 0.1)

    def create_cbn_input(self, lstm_emb):
        delta_betas = self.fc_beta(lstm_emb)
        delta_gammas = self.fc_gamma(lstm_emb)
        return delta_betas, delta_gammas

    def create_init_beta_gamma(self, batch_size, channels):
        # beta and gamma parameters for each channel - defined as trainable parameters
        self.betas = nn.Parameter(torch.zeros(batch_size, channels))
        self.gammas = nn.Parameter(torch.ones(batch_size, channels))

    def forward(self, feature, lstm_emb):
        self.batch_size, self.channels, self.height, self.width = feature.data.shape
        # get initial beta and gamma
        self.create_init_beta_gamma(self.batch_size, self.channels)  # <- module_in_forward

        # get delta values
        delta_betas, delta_gammas = self.create_cbn_input(lstm_emb)

        betas_cloned = self.betas.clone()
        gammas_cloned = self.gammas.clone()
        betas_cloned += delta_betas
        gammas_cloned += delta_gammas

        batch_mean = torch.mean(feature)
        batch_var = torch.var(feature)

        betas_expanded = torch.stack([betas_cloned] * self.height, dim=2)
        betas_expanded = torch.stack([betas_expanded] * self.width, dim=3)
        gammas_expanded = torch.stack([gammas_cloned] * self.height, dim=2)
        gammas_expanded = torch.stack([gammas_expanded] * self.width, dim=3)

        feature_normalized = (feature - batch_mean) / torch.sqrt(batch_var + self.eps)
        out = torch.mul(feature_normalized, gammas_expanded) + betas_expanded
        return out, lstm_emb


class Net(nn.Module):
    def __init__(self, lstm_size=12, channels=8, n_answers=5):
        super(Net, self).__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.cbn = CBN(lstm_size, 16, channels)
        self.fc = nn.Linear(channels, n_answers)

    def forward(self, img, lstm_emb):
        x = self.conv(img)
        x, _ = self.cbn(x, lstm_emb)
        x = torch.relu(x).mean(dim=(2, 3))
        return self.fc(x)


batch_size = 4
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

for step in range(5):
    img = torch.randn(batch_size, 3, 6, 6)
    q_emb = torch.randn(batch_size, 12)  # question embedding from the LSTM
    answer = torch.randint(0, 5, (batch_size,))
    optimizer.zero_grad()
    loss = criterion(model(img, q_emb), answer)
    loss.backward()
    optimizer.step()

print("cbn gammas after training:", model.cbn.gammas.detach()[0])
print("gammas never learned (still all ones):", bool(torch.all(model.cbn.gammas == 1)))
