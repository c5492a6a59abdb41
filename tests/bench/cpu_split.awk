# Where the CPU of chosen threads went, from a system-wide profile with call chains:
#   perf record -a -g -F HZ ...; perf script -F comm,tid,ip,sym,dso | awk -v tids=FILE -f cpu_split.awk
# FILE has lines "TID LABEL" (LABEL without spaces: ibgwd, ibgwd-vhost, relay, haproxy...). Prints one
# line per label: "LABEL samples own_user own_kernel link rdma delivery" (sample counts). With
# -v detail=FILE, also each label's own samples by the function sampled, most first, into FILE.
#
# Each sample of a listed thread goes to the first class one of its frames names, walking from the
# sampled function towards the thread's entry point:
#   rdma      soft-RoCE at work (rxe, the verbs system calls into it): an HCA's work on hardware
#   link      the emulated Ethernet link: vhost-net, tap, af_packet (the kernel's send path, and the
#             PMD that copies each frame between its mbuf and the socket's ring), veth, the eventfd a
#             virtio_user queue is kicked through: a NIC's work (DMA, a doorbell write) on hardware
#   delivery  the kernel's receive path below TCP (netif, IP): on veth it runs in the sender's
#             context, so a relay's sends carry its peer's receive work, which on hardware runs on the
#             peer's own host
#   own       everything else: the thread's code in user space (own_user) and the kernel work it
#             asks for (own_kernel: system calls, kernel TCP, copies, sleeps and wake-ups)
# This is conservative for a user-space stack (ibgwd): a kernel relay's TCP receive work for its own
# sockets runs under netif/IP receive (delivery, not counted), or in its peer's context, while
# ibgwd's TCP receive work is its own code and counted.
function classify(sym, dso) {
	if (sym ~ /^(rxe_|__rxe_|ib_uverbs|uverbs_|ib_umem|rdma_)/ || dso ~ /(rdma_rxe|ib_uverbs|ib_core)/)
		return "rdma"
	if (sym ~ /^(vhost_|handle_tx|handle_rx|tun_|tap_|tpacket_|packet_|veth_|skb_copy_ubufs|eventfd_write|eventfd_signal)/ ||
	    dso ~ /librte_net_af_(packet|xdp)/)
		return "link"
	if (sym ~ /^(__netif_receive_skb|netif_receive_skb|process_backlog|__netif_rx|netif_rx|net_rx_action|napi_gro|gro_|ip_rcv|ip_list_rcv|ip6_rcv|ip_local_deliver|ip_sublist_rcv)/)
		return "delivery"
	return ""
}
function flush() {
	if (lab != "") {
		n[lab]++
		if (cls == "") cls = user ? "own_user" : "own_kernel"
		c[lab, cls]++
		if (cls ~ /^own/) fn[lab " " (user ? "[.] " : "[k] ") leafsym " (" leafdso ")"]++
	}
	lab = ""; cls = ""; depth = 0
}
BEGIN {
	while ((getline line < tids) > 0) {
		split(line, f, " ")
		want[f[1]] = f[2]
	}
	lab = ""
}
/^[^ \t]/ { flush(); tid = $NF; lab = (tid in want) ? want[tid] : ""; next }
/^[ \t]+[0-9a-f]+ / {
	if (lab == "") next
	ip = $1; sym = $2
	dso = $NF
	if (depth++ == 0) {
		user = (length(ip) < 16 || substr(ip, 1, 1) !~ /[89a-f]/)
		leafsym = sym; leafdso = dso
		gsub(/[()]/, "", leafdso)
	}
	if (cls == "") cls = classify(sym, dso)
	next
}
/^$/ { flush() }
END {
	flush()
	for (l in n)
		printf "%s %d %d %d %d %d %d\n", l, n[l], c[l, "own_user"], c[l, "own_kernel"], c[l, "link"], c[l, "rdma"], c[l, "delivery"]
	if (detail != "") {
		for (k in fn) printf "%6d %s\n", fn[k], k | ("sort -rn > " detail)
		close("sort -rn > " detail)
	}
}
