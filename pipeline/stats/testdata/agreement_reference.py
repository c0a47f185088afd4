#!/usr/bin/env python3
"""Reference values for pipeline/stats/multiway_test.go, computed apart from
the Go code (python3, standard library only; run from this folder).

Krippendorff's alpha (nominal) by enumerating, unit by unit, every ordered
pair of pairable values, weighted 1/(m_u - 1), against all ordered pairs of
pairable values in the data (Krippendorff, K. (2011). Computing
Krippendorff's Alpha-Reliability. Annenberg School for Communication,
University of Pennsylvania, https://repository.upenn.edu/asc_papers/43 :
alpha = 1 - D_o / D_e). Its section on nominal data with missing values
works an example of 4 observers and 12 units whose published alpha is
0.743; it is "krippendorff_2011" in agreement_reference.json (observers as
columns, "" where one gave no value).

Cohen's kappa and linearly weighted kappa (Cohen 1968) from the
confusion matrix of people (rows) and judge (columns), with no verdict ("")
as an extra judge column of disagreement weight 1.
"""
import json

d = json.load(open("agreement_reference.json"))


def alpha(units):
    vals = [[v for v in u if v != ""] for u in units]
    vals = [v for v in vals if len(v) >= 2]
    n = sum(len(v) for v in vals)
    do = 0.0
    for v in vals:
        m = len(v)
        do += sum(1 for i in range(m) for j in range(m) if i != j and v[i] != v[j]) / (m - 1)
    do /= n
    allv = [x for v in vals for x in v]
    de = sum(1 for i in range(n) for j in range(n) if i != j and allv[i] != allv[j]) / (n * (n - 1))
    return 1 - do / de, n


def kappas(pairs, classes):
    cols = classes + sorted({j for _, j in pairs if j not in classes})
    n = len(pairs)
    obs = [[sum(1 for h, j in pairs if h == a and j == b) / n for b in cols] for a in classes]
    row = [sum(r) for r in obs]
    col = [sum(obs[i][k] for i in range(len(classes))) for k in range(len(cols))]
    k = len(classes)

    def w(i, j, linear):
        if j >= k:
            return 1.0
        return abs(i - j) / (k - 1) if linear else float(i != j)

    out = []
    for linear in (False, True):
        o = sum(w(i, j, linear) * obs[i][j] for i in range(k) for j in range(len(cols)))
        e = sum(w(i, j, linear) * row[i] * col[j] for i in range(k) for j in range(len(cols)))
        out.append(1 - o / e)
    return out


print("krippendorff_2011 alpha %.6f n %d" % alpha(d["krippendorff_2011"]))
print("random_units alpha %.6f n %d" % alpha(d["random_units"]))
print("three_way_pairs kappa %.6f linear %.6f" % tuple(kappas(d["three_way_pairs"], d["classes"])))
