// SPDX-License-Identifier: MIT
/*
 * /init of the driver-test initramfs: mount the pseudo file systems, load
 * pccx_simlink.ko, start the simulator daemon, load pccx.ko, run the guest
 * tests and the USB path's, unload both modules (the remove paths are tested too), scan the
 * kernel log for warnings, oopses and leak reports, print the verdict and
 * power off, telling QEMU the result through isa-debug-exit on x86.
 *
 * Serial-console protocol read by scripts/qemu/run.sh:
 *   PCCX-TEST ok <name>            PCCX-TEST FAIL <name>: <why>
 *   PCCX-RESULT <n> passed, <m> failed
 *
 * The kernel command line chooses what to run: pccx.tests=<list> (passed to
 * pccx-tests), pccx.modparams="<params for pccx.ko>".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/klog.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <sys/io.h>
#endif

static int passed, failed;

static void result(int ok, const char *name, const char *why)
{
	if (ok) {
		passed++;
		printf("PCCX-TEST ok %s\n", name);
	} else {
		failed++;
		printf("PCCX-TEST FAIL %s: %s\n", name, why);
	}
	fflush(stdout);
}

static int load_module(const char *path, const char *params)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = (int)syscall(SYS_finit_module, fd, params, 0);
	r = r ? -errno : 0;
	close(fd);
	return r;
}

static int unload_module(const char *name)
{
	int i;

	/* the driver may still be releasing the last file of a test process */
	for (i = 0; i < 50; i++) {
		if (!syscall(SYS_delete_module, name, O_NONBLOCK))
			return 0;
		if (errno != EAGAIN && errno != EBUSY && errno != EWOULDBLOCK)
			return -errno;
		usleep(100000);
	}
	return -errno;
}

static int wait_path(const char *path, int ms)
{
	struct stat st;

	while (ms > 0) {
		if (!stat(path, &st))
			return 0;
		usleep(10000);
		ms -= 10;
	}
	return -1;
}

static char cmdline[4096];

/* Value of key=... on the kernel command line ("" if absent); quotes allowed. */
static void cmdline_get(const char *key, char *out, size_t n)
{
	const char *p = cmdline;
	size_t kl = strlen(key);

	out[0] = 0;
	while ((p = strstr(p, key))) {
		if ((p == cmdline || p[-1] == ' ') && p[kl] == '=') {
			const char *v = p + kl + 1;
			char end = ' ';
			size_t i = 0;

			if (*v == '"') {
				end = '"';
				v++;
			}
			while (v[i] && v[i] != end && v[i] != '\n' && i + 1 < n) {
				out[i] = v[i];
				i++;
			}
			out[i] = 0;
			return;
		}
		p += kl;
	}
}

static int run(char *const argv[], int timeout_s)
{
	pid_t pid = fork();
	int st, waited = 0;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (waited >= timeout_s * 10) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -2;
		}
		usleep(100000);
		waited++;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Further guest programs (scripts/qemu/run.sh PCCX_QEMU_EXTRA, tests/qemu/extra/): each
 * /bin/extra/NAME runs after pccx-tests, in name order, with the daemon and both modules
 * loaded; its exit status is its verdict: 0 passes, 77 skips, anything else fails.
 */
static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_extras(void)
{
	static char names[64][256];
	char *sorted[64], path[300], name[300], why[64];
	struct dirent *de;
	DIR *d = opendir("/bin/extra");
	int n = 0, i, r;

	if (!d)
		return;
	while ((de = readdir(d)) && n < 64)
		if (de->d_name[0] != '.') {
			snprintf(names[n], sizeof(names[n]), "%s", de->d_name);
			sorted[n] = names[n];
			n++;
		}
	closedir(d);
	qsort(sorted, (size_t)n, sizeof(sorted[0]), cmp_names);
	for (i = 0; i < n; i++) {
		char *argv[2] = { path, NULL };

		snprintf(path, sizeof(path), "/bin/extra/%s", sorted[i]);
		snprintf(name, sizeof(name), "extra:%s", sorted[i]);
		fflush(stdout);
		r = run(argv, 120);
		if (r == 77) {
			printf("PCCX-TEST skip %s\n", name);
			continue;
		}
		snprintf(why, sizeof(why), "exited with %d%s", r, r == -2 ? " (timed out)" : "");
		result(r == 0, name, why);
	}
}

/*
 * The USB path (docs/usb.md): the gadget modules in order (dummy_hcd is both the UDC and the
 * host controller it is plugged into), configfs mounted, then /bin/usb-link, which prints its
 * own PCCX-TEST lines and starts pccx-boardd itself. Runs when pccx.tests is empty or names
 * "usb" (or "bench": usb-link then runs its benchmark only).
 */
static void run_usb(const char *tests)
{
	static const char *const mods[] = { "usb-common", "usbcore", "udc-core", "dummy_hcd",
					    "configfs", "libcomposite", "usb_f_fs" };
	char path[128], why[256];
	char *argv[3] = { "/bin/usb-link", (char *)tests, NULL };
	unsigned int i;
	int r = 0;

	if (access("/bin/usb-link", X_OK) ||
	    (tests[0] && !strstr(tests, "usb") && !strstr(tests, "bench")))
		return;
	for (i = 0; !r && i < sizeof(mods) / sizeof(mods[0]); i++) {
		snprintf(path, sizeof(path), "/lib/usb/%s.ko", mods[i]);
		r = load_module(path, "");
		if (r == -EEXIST)
			r = 0;
		snprintf(why, sizeof(why), "%s: %s", mods[i], strerror(-r));
	}
	if (!r && mount("configfs", "/sys/kernel/config", "configfs", 0, NULL) && errno != EBUSY) {
		r = -errno;
		snprintf(why, sizeof(why), "mount configfs: %s", strerror(errno));
	}
	result(!r, "usb-modules", why);
	if (r)
		return;
	r = run(argv, 300);
	snprintf(why, sizeof(why), "usb-link exited with %d%s", r, r == -2 ? " (timed out)" : "");
	result(r == 0 || r == 1, "usb-link-finished", why);
	if (r == 1)
		failed++;	/* its own FAIL lines are counted by the harness */
}

/* Scan the kernel log; print it between markers so the harness keeps it. */
static void check_kernel_log(void)
{
	static const char *const bad[] = { "WARNING:", "BUG:", "Oops", "kernel BUG",
					   "unreferenced object", "leak", "Call Trace" };
	static char buf[1 << 20];
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char why[256];
	unsigned i;
	int found = 0;

	if (n <= 0 || n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, n);
	if (n < 0) {
		result(0, "kernel-log", "cannot read the kernel log");
		return;
	}
	buf[n] = 0;
	printf("PCCX-DMESG-BEGIN\n%s\nPCCX-DMESG-END\n", buf);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (strstr(buf, bad[i])) {
			snprintf(why, sizeof(why), "kernel log contains '%s'", bad[i]);
			result(0, "kernel-log", why);
			found = 1;
		}
	}
	if (!found)
		result(1, "kernel-log", NULL);
}

static void finish(void)
{
	printf("PCCX-RESULT %d passed, %d failed\n", passed, failed);
	fflush(stdout);
	sync();
#if defined(__x86_64__)
	/* isa-debug-exit: QEMU exits with (v << 1) | 1 */
	if (!ioperm(0xf4, 4, 1))
		outl(failed ? 1 : 0, 0xf4);
#endif
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

int main(void)
{
	char modparams[512], tests[512], why[256];
	char *targv[4];
	pid_t simd;
	int fd, r, probed;

	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	mount("tmpfs", "/run", "tmpfs", 0, NULL);
	fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open("/proc/cmdline", O_RDONLY);
	if (fd >= 0) {
		r = (int)read(fd, cmdline, sizeof(cmdline) - 1);
		cmdline[r > 0 ? r : 0] = 0;
		close(fd);
	}
	cmdline_get("pccx.modparams", modparams, sizeof(modparams));
	cmdline_get("pccx.tests", tests, sizeof(tests));
	printf("pccx-init: kernel up, modparams '%s'\n", modparams);

	r = load_module("/lib/pccx_simlink.ko", "");
	snprintf(why, sizeof(why), "finit_module: %s", strerror(-r));
	result(!r, "load-simlink", why);
	if (r)
		finish();

	simd = fork();
	if (simd == 0) {
		execl("/bin/pccx-simd", "pccx-simd", "--ctl", "/run/simd.ctl", "--rsp",
		      "/run/simd.rsp", "--ready", "/run/simd.ready", (char *)NULL);
		_exit(127);
	}
	r = wait_path("/run/simd.ready", 20000);
	result(!r, "simd-attach", "the simulator daemon did not attach");
	if (r)
		finish();

	r = load_module("/lib/pccx.ko", modparams);
	snprintf(why, sizeof(why), "finit_module: %s", strerror(-r));
	result(!r, "load-pccx", why);
	if (r)
		finish();
	r = wait_path("/dev/pccx", 20000);
	result(!r, "probe", "/dev/pccx did not appear (see the kernel log)");
	probed = !r;

	if (probed) {
		targv[0] = "/bin/pccx-tests";
		targv[1] = tests[0] ? tests : NULL;
		targv[2] = NULL;
		r = run(targv, 240);
		/* pccx-tests prints its own PCCX-TEST lines; its exit says if it finished */
		snprintf(why, sizeof(why), "pccx-tests exited with %d", r);
		result(r == 0 || r == 1, "guest-tests-finished", why);
		if (r == 1)
			failed++;	/* counted again below from its lines by the harness */
	}

	if (probed)
		run_extras();
	if (probed)
		run_usb(tests);

	r = unload_module("pccx");
	snprintf(why, sizeof(why), "delete_module: %s", strerror(-r));
	result(!r, "unload-pccx", why);
	kill(simd, SIGTERM);
	waitpid(simd, NULL, 0);
	r = unload_module("pccx_simlink");
	snprintf(why, sizeof(why), "delete_module: %s", strerror(-r));
	result(!r, "unload-simlink", why);
	check_kernel_log();
	finish();
	return 0;
}
