package journal

// This file opens backdoors needed only by tests.

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var (
	DecodeValue = decodeValue
	EncodeValue = encodeValue
	Seal        = seal
	DBKey       = dbKey
)

// CloseDB closes the bbolt database under j without j knowing, so that its
// next write fails.
func CloseDB(j *Journal) error { return j.db.Close() }

// Fill adds n reserved records with keys Key{scope, "fill-<i>"} in one
// transaction, as if they had been reserved one by one.
func Fill(j *Journal, scope string, n int) error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	var size int64
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		for i := range n {
			key := dbKey(j.secret, Key{Scope: scope, RequestID: fmt.Sprint("fill-", i)})
			rec := Record{Kind: "click", State: StateReserved, Dispatch: DispatchUnknown, ReservedAt: j.now()}
			val, err := encodeValue(j.secret, key, &rec)
			if err != nil {
				return err
			}
			if err := b.Put(key, val); err != nil {
				return err
			}
			size += int64(len(key) + len(val))
		}
		return nil
	})
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.entries += n
	j.reserved += n
	j.bytes += size
	j.mu.Unlock()
	return nil
}
