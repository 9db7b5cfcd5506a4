// Package heap will hold boltmesh's symmetric heap: one mmap'd region per
// rank and a symmetric allocator, so that the same (offset, length) names
// the same buffer on every rank. It is filled by the symmetric-heap work;
// until then it holds only this documentation.
package heap
