package state

import "context"

// pageBatch is how many index members Page reads at a time.
const pageBatch = 200

// Page returns page (from 1) of limit items of index, newest first: each
// member loaded by load, which says ok=false for one to skip (expired but
// not swept yet, or not finished), so that skipped members take no place
// in any page. A load error ends the walk.
func Page[T any](ctx context.Context, st Store, index string, page, limit int, load func(id string) (item T, ok bool, err error)) ([]T, error) {
	out := []T{}
	skip := (page - 1) * limit
	for off := 0; len(out) < limit; off += pageBatch {
		ids, err := st.IndexRange(ctx, index, MinScore, MaxScore, off, pageBatch, true)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			item, ok, err := load(id)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if len(out) < limit {
				out = append(out, item)
			}
		}
		if len(ids) < pageBatch {
			break
		}
	}
	return out, nil
}
