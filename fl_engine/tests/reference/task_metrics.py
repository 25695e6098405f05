"""Reference values for fl_engine/tests/task_metrics.rs.

Run once with scikit-learn 1.x, scikit-survival 0.2x and numpy installed:
    python3 task_metrics.py
and paste the printed values into the tests (they are hard-coded there with this script named).
"""
import numpy as np
from sklearn.metrics import (average_precision_score, balanced_accuracy_score, brier_score_loss,
                             f1_score, precision_score, recall_score, roc_auc_score)
from sksurv.linear_model.coxph import BreslowEstimator, CoxPHOptimizer
from sksurv.metrics import concordance_index_censored, integrated_brier_score
from sksurv.util import Surv

np.set_printoptions(precision=17)

# --- binary -------------------------------------------------------------------------------
y = np.array([0, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1])
p = np.array([0.1, 0.4, 0.35, 0.8, 0.65, 0.9, 0.55, 0.2, 0.45, 0.5, 0.05, 0.7], dtype=np.float32)
p64 = p.astype(np.float64)
pred = (p > 0.5).astype(int)
print("binary precision", repr(precision_score(y, pred)))
print("binary recall", repr(recall_score(y, pred)))
print("binary f1", repr(f1_score(y, pred)))
print("binary brier", repr(brier_score_loss(y, p64)))
print("binary auroc", repr(roc_auc_score(y, p64)))
print("binary auprc", repr(average_precision_score(y, p64)))
print("binary balanced_accuracy", repr(balanced_accuracy_score(y, pred)))

# --- multi-class (3 classes, argmax prediction) -------------------------------------------
yc = np.array([0, 1, 2, 2, 1, 0, 2, 1, 0, 2])
P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3],
              [0.6, 0.3, 0.1], [0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [0.1, 0.8, 0.1],
              [0.4, 0.35, 0.25], [0.15, 0.15, 0.7]], dtype=np.float32)
P64 = P.astype(np.float64)
pc = P.argmax(1)
print("multiclass macro precision", repr(precision_score(yc, pc, average="macro")))
print("multiclass macro recall", repr(recall_score(yc, pc, average="macro")))
print("multiclass macro f1", repr(f1_score(yc, pc, average="macro")))
print("multiclass ovr macro auroc", repr(roc_auc_score(yc, P64, multi_class="ovr", average="macro")))
onehot = np.eye(3)[yc]
print("multiclass ovr macro auprc", repr(average_precision_score(onehot, P64, average="macro")))
print("multiclass balanced_accuracy", repr(balanced_accuracy_score(yc, pc)))

# --- focal loss: torchvision.ops.sigmoid_focal_loss, written out in numpy ----------------
#   p = sigmoid(x); ce = BCE_with_logits(x, t); p_t = p t + (1 - p)(1 - t)
#   loss = ce (1 - p_t)^gamma; if alpha >= 0: loss *= alpha t + (1 - alpha)(1 - t); mean
def sigmoid_focal_loss(x, t, alpha=0.25, gamma=2.0):
    p = 1 / (1 + np.exp(-x))
    ce = np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * t + (1 - alpha) * (1 - t)) * loss
    return loss.mean()

z = np.array([-2.0, -0.5, 0.0, 0.3, 1.5, 3.0])
t = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
print("focal alpha=0.25 gamma=2", repr(float(sigmoid_focal_loss(z, t, 0.25, 2.0))))
print("focal no alpha gamma=1.5", repr(float(sigmoid_focal_loss(z, t, -1, 1.5))))

# --- survival -----------------------------------------------------------------------------
# integer times (exact in f32), tied event times, an event tied with a censoring
tr_time = np.array([5., 8., 8., 12., 15., 15., 20., 22., 25., 30., 33., 40.])
tr_event = np.array([1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 0, 0], dtype=bool)
tr_risk = np.array([1.2, 0.8, 0.3, 0.5, 0.9, -0.2, 0.1, 0.0, -0.5, -0.3, -1.0, -0.8])
te_time = np.array([4., 9., 12., 12., 18., 21., 26., 30., 35., 38.])
te_event = np.array([1, 1, 1, 0, 1, 0, 1, 1, 0, 0], dtype=bool)
te_risk = np.array([1.0, 0.6, 0.7, 0.2, 0.4, -0.1, 0.3, -0.6, -0.4, -0.9])

print("c-index train", repr(float(concordance_index_censored(tr_event, tr_time, tr_risk)[0])))
print("c-index test", repr(float(concordance_index_censored(te_event, te_time, te_risk)[0])))

# Breslow partial likelihood: CoxPHOptimizer.nlog_likelihood is the negative log partial
# likelihood divided by the number of samples; times n / D gives the per-event value
opt = CoxPHOptimizer(tr_risk[:, None], tr_event, tr_time, alpha=np.zeros(1), ties="breslow")
nll = opt.nlog_likelihood(np.array([1.0]))
print("cox breslow nll per event (train)", repr(float(nll * len(tr_time) / tr_event.sum())))

base = BreslowEstimator().fit(tr_risk, tr_event, tr_time)
grid = np.unique(te_time[te_event & (te_time < te_time.max())])
surv = np.vstack([f(grid) for f in base.get_survival_function(te_risk)])
ibs = integrated_brier_score(Surv.from_arrays(tr_event, tr_time),
                             Surv.from_arrays(te_event, te_time), surv, grid)
print("ibs grid", grid)
print("integrated brier (test)", repr(float(ibs)))

# cross-check of the C-index with lifelines (it takes predicted times: higher = longer, so -risk)
from lifelines.utils import concordance_index
print("lifelines c-index test", repr(float(concordance_index(te_time, -te_risk, te_event))))
