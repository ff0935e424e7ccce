package partition

// A directory fsync makes every entry in the directory durable, that of a
// segment rolled a moment ago included. If that segment's entry survives a
// power cut but the tail of the segment before it does not, the log has a
// hole in its offsets: recovery keeps both segments (an empty or short
// segment is not a torn one; compaction leaves such gaps too), and the
// lost offsets are never reassigned. So a directory fsync runs only once
// the data of every segment before the newest is durable, with dirMu
// keeping a roll from slipping a new segment in meanwhile.

// maxDirSyncTries bounds the retries when rolls keep coming; after that
// the directory is fsynced anyway (the window is then what Kafka's own
// LocalLog.flush leaves).
const maxDirSyncTries = 8

// syncDirAfter fsyncs the directory from flushOnce, which has just fsynced
// synced (oldest first, the newest segment of the time last). Segments
// rolled since are fsynced first, from the one that was newest on.
func (l *Log) syncDirAfter(synced []*segment) error {
	for tries := 0; ; tries++ {
		newest := synced[len(synced)-1]
		l.dirMu.Lock()
		cur := *l.segs.Load()
		if cur[len(cur)-1] == newest || tries == maxDirSyncTries {
			err := l.store.fs.SyncDir(l.dir)
			l.dirMu.Unlock()
			return err
		}
		l.dirMu.Unlock()
		j := 0
		for k, s := range cur {
			if s == newest {
				j = k
			}
		}
		for _, s := range cur[j:] {
			if err := s.syncData(false); err != nil {
				return err
			}
		}
		synced = cur[j:]
	}
}

// syncDirSafely fsyncs the directory after a change of its entries
// (segments retired or swapped), flushing the data below the newest
// segment first; errors take the data dir offline and wrap ErrStorage.
func (l *Log) syncDirSafely() error {
	for tries := 0; ; tries++ {
		segs := *l.segs.Load()
		newest := segs[len(segs)-1]
		if err := l.syncTo(newest.base); err != nil {
			return storageError(err)
		}
		l.dirMu.Lock()
		cur := *l.segs.Load()
		if cur[len(cur)-1] == newest || tries == maxDirSyncTries {
			err := l.store.fs.SyncDir(l.dir)
			l.dirMu.Unlock()
			if err != nil {
				l.store.markOffline(err)
				return storageError(err)
			}
			return nil
		}
		l.dirMu.Unlock()
	}
}
