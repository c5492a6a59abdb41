# The median of per-round ratios, for the benchmarks' awk programs that take several rounds side by
# side (awk -f tests/bench/median.awk -f PROGRAM: bench_eth.sh's and guest_e2e.sh's cpu splits).
# median(R, AT, N) sorts the ratios R[1..N] (AT[i]: ratio i's round, moved along) and returns their
# median; it sets MEDIAN_AT, the round whose figures to describe (for an even N the lower middle one),
# and MEDIAN_LIST, the ratios in order ("%.2f", space-separated).
function median(r, at, n,    i, j, x, mid) {
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (r[j] < r[i]) { x = r[i]; r[i] = r[j]; r[j] = x; x = at[i]; at[i] = at[j]; at[j] = x }
	mid = int((n + 1) / 2)
	MEDIAN_AT = at[mid]
	MEDIAN_LIST = ""
	for (i = 1; i <= n; i++)
		MEDIAN_LIST = MEDIAN_LIST (i > 1 ? " " : "") sprintf("%.2f", r[i])
	return (n % 2) ? r[mid] : (r[mid] + r[mid + 1]) / 2
}
