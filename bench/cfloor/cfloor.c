/*
 * cfloor: the C floor of the benchmark's cache group.
 *
 * A FUSE server that does as little as a server can: it snapshots the
 * metadata of a local tree into memory at start, answers every lookup,
 * getattr and readdir from that snapshot with day-long timeouts, tells the
 * kernel it has no open or opendir (so the kernel sends neither, nor their
 * releases, and keeps file and directory data cached), and serves file
 * contents by splicing from the local files. It runs one thread: on a
 * two-core machine a single thread answers a walk's serial requests faster
 * than a pool that hands each one to another thread.
 *
 * Its times are what the kernel's FUSE requests alone cost a workload on
 * this machine, whatever the server is written in. It writes nothing
 * (creating a file fails with ENOSYS), but is mounted read-write, as
 * sshfsm is: on a read-only mount the kernel would skip requests (atime
 * updates after reads) that every read-write mount pays.
 *
 * Build: cc -O2 cfloor.c $(pkg-config --cflags --libs fuse3)
 * Usage: cfloor SRC MOUNTPOINT   (serves in the foreground until unmounted)
 */
#define FUSE_USE_VERSION 34
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const double timeout = 86400.0;

/* One name of the tree. Its FUSE node id is its index + 1; st keeps the
 * local file's own inode number and times, so that a git index made on
 * the local copy stays clean when read through the mount. */
struct node {
	char *name, *path, *link;
	struct stat st;
	int *kids, nkids, capkids;
	int fd; /* opened at its first read; 0 until then, else fd + 1 */
};

static struct node *nodes;
static int nnodes, capnodes;
static int dirs[PATH_MAX / 2]; /* the directories of the walk's current path, by depth */

static void *grow(void *p, int *cap, size_t size)
{
	*cap = *cap ? *cap * 2 : 64;
	p = realloc(p, (size_t)*cap * size);
	if (!p) {
		perror("cfloor");
		exit(1);
	}
	return p;
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	if (nnodes == capnodes)
		nodes = grow(nodes, &capnodes, sizeof *nodes);
	int i = nnodes++;
	struct node *n = &nodes[i];
	memset(n, 0, sizeof *n);
	n->path = strdup(path);
	n->name = strdup(ftw->level ? path + ftw->base : "");
	n->st = *st;
	if (S_ISLNK(st->st_mode)) {
		char buf[PATH_MAX];
		ssize_t len = readlink(path, buf, sizeof buf - 1);
		buf[len < 0 ? 0 : len] = 0;
		n->link = strdup(buf);
	}
	if (ftw->level > 0) {
		struct node *p = &nodes[dirs[ftw->level - 1]];
		if (p->nkids == p->capkids)
			p->kids = grow(p->kids, &p->capkids, sizeof(int));
		p->kids[p->nkids++] = i;
	}
	if (S_ISDIR(st->st_mode) && ftw->level < (int)(sizeof dirs / sizeof dirs[0]))
		dirs[ftw->level] = i;
	return 0;
}

static struct node *node(fuse_ino_t ino) { return &nodes[ino - 1]; }

static void entry(struct fuse_entry_param *e, int i)
{
	memset(e, 0, sizeof *e);
	e->ino = (fuse_ino_t)i + 1;
	e->attr = nodes[i].st;
	e->attr_timeout = timeout;
	e->entry_timeout = timeout;
}

static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct node *p = node(parent);
	struct fuse_entry_param e;
	for (int k = 0; k < p->nkids; k++) {
		if (strcmp(nodes[p->kids[k]].name, name) == 0) {
			entry(&e, p->kids[k]);
			fuse_reply_entry(req, &e);
			return;
		}
	}
	memset(&e, 0, sizeof e); /* a negative entry, cached as long */
	e.entry_timeout = timeout;
	fuse_reply_entry(req, &e);
}

static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_attr(req, &node(ino)->st, timeout);
}

static void do_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (node(ino)->link)
		fuse_reply_readlink(req, node(ino)->link);
	else
		fuse_reply_err(req, EINVAL);
}

static void no_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct node *d = node(ino);
	char *buf = malloc(size);
	size_t used = 0;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (off_t k = off; k < d->nkids; k++) {
		int i = d->kids[k];
		size_t n;
		if (plus) {
			struct fuse_entry_param e;
			entry(&e, i);
			n = fuse_add_direntry_plus(req, buf + used, size - used, nodes[i].name, &e, k + 1);
		} else {
			n = fuse_add_direntry(req, buf + used, size - used, nodes[i].name, &nodes[i].st, k + 1);
		}
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	list(req, ino, size, off, 0);
}

static void do_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	list(req, ino, size, off, 1);
}

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	struct node *n = node(ino);
	if (!n->fd) {
		int fd = open(n->path, O_RDONLY);
		if (fd < 0) {
			fuse_reply_err(req, errno);
			return;
		}
		n->fd = fd + 1;
	}
	struct fuse_bufvec b = FUSE_BUFVEC_INIT(size);
	b.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	b.buf[0].fd = n->fd - 1;
	b.buf[0].pos = off;
	fuse_reply_data(req, &b, FUSE_BUF_SPLICE_MOVE);
}

static void do_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req); /* nodes live as long as the mount */
}

static void do_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	(void)count;
	(void)f;
	fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = do_lookup,
	.forget = do_forget,
	.forget_multi = do_forget_multi,
	.getattr = do_getattr,
	.readlink = do_readlink,
	.open = no_open,
	.opendir = no_open,
	.read = do_read,
	.readdir = do_readdir,
	.readdirplus = do_readdirplus,
};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cfloor SRC MOUNTPOINT\n");
		return 2;
	}
	if (nftw(argv[1], visit, 64, FTW_PHYS) != 0 || nnodes == 0) {
		perror("cfloor: walking the source");
		return 1;
	}
	char *fargv[] = {argv[0], "-o", "fsname=cfloor,subtype=cfloor", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!se || fuse_session_mount(se, argv[2]) != 0)
		return 1;
	fuse_set_signal_handlers(se);
	int err = fuse_session_loop(se);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return err ? 1 : 0;
}
