/* Hand-written SVG plots for `specdec bench --plot`: c_v(S) against S (with
 * the two bounds: 1 = weights read once for any S, S = S separate forwards)
 * and, when the K sweep ran, measured and predicted speedup against K. */
#include <math.h>
#include <stdio.h>

#include "command/bench.h"

enum { PW = 440, PH = 320, ML = 50, MR = 15, MT = 30, MB = 40 };

typedef struct panel {
    FILE *f;
    double x0, y0;              /* panel origin in the image */
    double xmin, xmax, ymin, ymax;
} panel;

static double px(const panel *p, double x) { return p->x0 + ML + (x - p->xmin) / (p->xmax - p->xmin) * (PW - ML - MR); }
static double py(const panel *p, double y) { return p->y0 + PH - MB - (y - p->ymin) / (p->ymax - p->ymin) * (PH - MT - MB); }

static void axes(const panel *p, const char *title, const char *xlabel, int xstep, double ystep) {
    FILE *f = p->f;
    fprintf(f, "<text x='%.1f' y='%.1f' font-size='14' text-anchor='middle'>%s</text>\n",
            p->x0 + PW / 2.0, p->y0 + 18, title);
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%d' height='%d' fill='none' stroke='#444'/>\n",
            p->x0 + ML, p->y0 + MT, PW - ML - MR, PH - MT - MB);
    for (int x = (int)p->xmin; x <= (int)p->xmax; x += xstep)
        fprintf(f, "<text x='%.1f' y='%.1f' font-size='10' text-anchor='middle'>%d</text>\n", px(p, x),
                p->y0 + PH - MB + 14, x);
    for (double y = p->ymin; y <= p->ymax + 1e-9; y += ystep) {
        fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>\n", px(p, p->xmin), py(p, y),
                px(p, p->xmax), py(p, y));
        fprintf(f, "<text x='%.1f' y='%.1f' font-size='10' text-anchor='end'>%.1f</text>\n", p->x0 + ML - 4,
                py(p, y) + 3, y);
    }
    fprintf(f, "<text x='%.1f' y='%.1f' font-size='11' text-anchor='middle'>%s</text>\n", p->x0 + PW / 2.0,
            p->y0 + PH - 8, xlabel);
}

/* Polyline through (xs[i], ys[i]), clipped to the panel's y range. */
static void line(const panel *p, const double *xs, const double *ys, int n, const char *color, bool dashed) {
    fprintf(p->f, "<polyline fill='none' stroke='%s' stroke-width='2'%s points='", color,
            dashed ? " stroke-dasharray='5,4'" : "");
    for (int i = 0; i < n; i++) {
        if (!isfinite(ys[i])) continue;
        double y = ys[i] > p->ymax ? p->ymax : ys[i];
        fprintf(p->f, "%.1f,%.1f ", px(p, xs[i]), py(p, y));
    }
    fprintf(p->f, "'/>\n");
}

static void legend(const panel *p, int row, const char *color, bool dashed, const char *text) {
    double x = p->x0 + ML + 10, y = p->y0 + MT + 14 + 14 * row;
    fprintf(p->f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2'%s/>\n", x, y - 4,
            x + 20, y - 4, color, dashed ? " stroke-dasharray='5,4'" : "");
    fprintf(p->f, "<text x='%.1f' y='%.1f' font-size='11'>%s</text>\n", x + 26, y, text);
}

static double max_of(const double *v, int n, double floor) {
    double m = floor;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] > m) m = v[i];
    return m;
}

static void cv_panel(FILE *f, const bench_results *r) {
    double xs[BENCH_MAX_S], ys[BENCH_MAX_S], one[BENCH_MAX_S], ess[BENCH_MAX_S];
    for (int i = 0; i < BENCH_MAX_S; i++) xs[i] = i + 1, ys[i] = r->cv.cv[i + 1], one[i] = 1, ess[i] = i + 1;
    double top = ceil(max_of(ys, BENCH_MAX_S, 2.0) + 0.5);
    panel p = {f, 0, 0, 1, BENCH_MAX_S, 0, top};
    axes(&p, "verify cost c_v(S) = t(S) / t(1)", "S (tokens per forward)", 2, top > 8 ? 2 : 1);
    line(&p, xs, one, BENCH_MAX_S, "#999", true);
    line(&p, xs, ess, BENCH_MAX_S, "#c66", true);
    line(&p, xs, ys, BENCH_MAX_S, "#1f5fbf", false);
    legend(&p, 0, "#1f5fbf", false, "measured");
    legend(&p, 1, "#999", true, "1 (weights read once)");
    legend(&p, 2, "#c66", true, "S (S separate forwards)");
}

static void k_panel(FILE *f, const bench_results *r) {
    double xs[BENCH_MAX_K], meas[BENCH_MAX_K], pred[BENCH_MAX_K], one[BENCH_MAX_K];
    int n = r->n_k;
    for (int i = 0; i < n; i++)
        xs[i] = r->ksweep[i].k, meas[i] = r->ksweep[i].speedup, pred[i] = r->ksweep[i].predicted, one[i] = 1;
    double top = ceil(fmax(max_of(meas, n, 1.5), max_of(pred, n, 1.5)) + 0.5);
    panel p = {f, PW, 0, 1, BENCH_MAX_K, 0, top};
    char title[96];
    snprintf(title, sizeof title, "speedup vs K (%s)", r->sweep_drafter);
    axes(&p, title, "K (draft tokens per round)", 1, top > 8 ? 2 : 0.5);
    line(&p, xs, one, n, "#999", true);
    line(&p, xs, pred, n, "#c66", true);
    line(&p, xs, meas, n, "#1f5fbf", false);
    legend(&p, 0, "#1f5fbf", false, "measured");
    legend(&p, 1, "#c66", true, "predicted E(a,K)/(K r + c_v(K+1))");
}

sd_status bench_write_svg(const bench_results *r, const char *path, sd_err *err) {
    if (!r->cv.present) return sd_err_set(err, SD_ERR_ARG, "--plot needs the cv table");
    FILE *f = fopen(path, "w");
    if (!f) return sd_err_set(err, SD_ERR_IO, "%s: cannot write", path);
    int width = r->n_k ? 2 * PW : PW;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n", width, PH);
    fprintf(f, "<rect width='100%%' height='100%%' fill='white'/>\n");
    cv_panel(f, r);
    if (r->n_k) k_panel(f, r);
    fprintf(f, "</svg>\n");
    bool bad = ferror(f);
    if (fclose(f) || bad) return sd_err_set(err, SD_ERR_IO, "%s: cannot write", path);
    return SD_OK;
}
