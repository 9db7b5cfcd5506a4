//go:build amd64 && !purego

#include "textflag.h"

// func copyNT(dst, src unsafe.Pointer, blocks uintptr)
// copies blocks × 64 bytes from src to dst, 16-byte aligned, with
// non-temporal stores, and fences them. blocks > 0.
TEXT ·copyNT(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
copyNT_loop:
	MOVOU (SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVNTO X0, (DI)
	MOVNTO X1, 16(DI)
	MOVNTO X2, 32(DI)
	MOVNTO X3, 48(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ copyNT_loop
	SFENCE
	RET
