package sshx

import (
	"os"
	"syscall"
)

// badOwnerOrPerms is ssh's check of the user's own config (readconf.c):
// owned by someone other than the user or root, or writable by group or
// others, and ssh refuses to read it.
func badOwnerOrPerms(st os.FileInfo) bool {
	if st.Mode().Perm()&0o022 != 0 {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid != 0 && int(sys.Uid) != os.Getuid()
}
