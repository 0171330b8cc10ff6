/* SPDX-License-Identifier: MIT */
/* The ISA reference tables rendered from the instruction table (for docs/isa.md). */
#ifndef PCCX_ISA_DOC_H
#define PCCX_ISA_DOC_H

#include <stdio.h>

#define PCCX_ISA_DOC_BEGIN "<!-- BEGIN GENERATED: pccx isa-table -->"
#define PCCX_ISA_DOC_END "<!-- END GENERATED: pccx isa-table -->"

/* Write the Markdown tables (without the BEGIN/END markers). */
void pccx_isa_doc_write(FILE *f);

#endif
