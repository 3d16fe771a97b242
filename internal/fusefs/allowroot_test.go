package fusefs

import (
	"reflect"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// openFileOps are the requests libfuse's allow_root lets through from any
// user: those on files already open, and the ones without a caller.
var openFileOps = map[string]bool{
	"Read": true, "Write": true, "Writev": true, "Fsync": true, "Release": true,
	"ReadDir": true, "ReadDirPlus": true, "ReleaseDir": true, "FsyncDir": true,
	"Forget": true, "Init": true, "OnUnmount": true, "String": true, "SetDebug": true,
}

// callAs calls method m of fs with zero arguments whose request header
// names uid; it reports whether the call reached the inner file system
// and the status it returned otherwise.
func callAs(t *testing.T, fs fuse.RawFileSystem, m reflect.Method, uid uint32) (reached bool, st fuse.Status) {
	t.Helper()
	mv := reflect.ValueOf(fs).MethodByName(m.Name)
	args := make([]reflect.Value, mv.Type().NumIn())
	for i := range args {
		at := mv.Type().In(i)
		v := reflect.New(at).Elem()
		if at.Kind() == reflect.Pointer {
			v = reflect.New(at.Elem())
			if h := headerOf(v); h != nil {
				h.Uid = uid
			}
		}
		args[i] = v
	}
	defer func() {
		if r := recover(); r != nil {
			reached = true
		}
	}()
	out := mv.Call(args)
	if n := len(out); n > 0 {
		if s, ok := out[n-1].Interface().(fuse.Status); ok {
			return false, s
		}
	}
	return false, fuse.OK
}

// headerOf finds the request header in the struct p points to.
func headerOf(p reflect.Value) *fuse.InHeader {
	if h, ok := p.Interface().(*fuse.InHeader); ok {
		return h
	}
	if p.Elem().Kind() != reflect.Struct {
		return nil
	}
	if f := p.Elem().FieldByName("InHeader"); f.IsValid() {
		return f.Addr().Interface().(*fuse.InHeader)
	}
	return nil
}

// TestAllowRootTurnsAwayOthers: with allow_root, every request of a user
// other than the owner and root fails with EACCES before it reaches the
// file system, except those libfuse also lets through; root's and the
// owner's all reach it.
func TestAllowRootTurnsAwayOthers(t *testing.T) {
	const owner, other = 1000, 1001
	fs := ownerOrRoot{owner: owner} // a nil inner file system: reaching it panics
	ifc := reflect.TypeOf((*fuse.RawFileSystem)(nil)).Elem()
	for i := 0; i < ifc.NumMethod(); i++ {
		m := ifc.Method(i)
		for _, uid := range []uint32{owner, 0} {
			if reached, st := callAs(t, fs, m, uid); !reached && !openFileOps[m.Name] {
				t.Errorf("%s as uid %d: %v without reaching the file system", m.Name, uid, st)
			}
		}
		reached, st := callAs(t, fs, m, other)
		switch {
		case openFileOps[m.Name] && !reached && m.Name != "String" && m.Name != "SetDebug":
			t.Errorf("%s of another user did not reach the file system (%v); libfuse lets it through", m.Name, st)
		case !openFileOps[m.Name] && reached:
			t.Errorf("%s of another user reached the file system", m.Name)
		case !openFileOps[m.Name] && st != fuse.EACCES:
			t.Errorf("%s of another user: %v, want EACCES", m.Name, st)
		}
	}
}
