/** Registers every layer converter (each module registers its category on import). */
import './core.ts';
import './conv.ts';
import './pooling.ts';
import './normalization.ts';
import './merge.ts';
import './recurrent.ts';
import './wrappers.ts';
import './frost-heads.ts';
