/* SPDX-License-Identifier: MIT */
/*
 * A Promela model of the pool's wake-up protocol (src/wake.c, the worker
 * loop of src/worker.c, the manager of src/manager.c); checked with spin by
 * tests/model/check.sh.
 *
 * Modelled, step for step (each load or store of a shared counter is one
 * step: the code's seq_cst accesses, explored in every interleaving):
 *   - NS = 2 shards, each with a FIFO queue (a channel of job kinds) and
 *     the counters queued, idle, spinning, sleepers, wake_seq, want,
 *     submitted, taken; every shard covers the other (SYSLET__NEAR >= 1);
 *   - submit: enqueue, queued++, then syslet__wake(); the first submit
 *     starts the first worker itself;
 *   - syslet__wake: the shard's own spinner -> nothing; the other
 *     shard's spinner -> ask a watch; a sleeper -> wake_seq++ and
 *     FUTEX_WAKE(1); an idle worker -> nothing; a sleeper of the covering
 *     shard -> wake it; at the cap nothing, else ask growth. ask(k): read
 *     want, then CAS it to k while it is below k (want WATCH = 1, GROW =
 *     2: a grow ask replaces a watch, never the reverse);
 *   - the worker loop: take from its shard; else steal from the other
 *     (FAIR=1: it may steal first, as a worker does after SYSLET__FAIR
 *     jobs of its own in a row; any moment stands for that count);
 *     else spin (claim spinning by CAS, look for work until the budget
 *     ends, which may be at any moment, spinning = 0, look again); else
 *     sleep (sleepers++, read wake_seq, look for work, FUTEX_WAIT), or
 *     time out and retire (idle--, look again, stay if work);
 *   - running a job: syslet__wake_busy (idle--, spinning = 0 if held, then
 *     re-read the queues of its shard and of the shard it covers, and wake
 *     for each with jobs), then the job: QUICK (post, claim the spinner
 *     role, idle++), BLOCK (blocks forever), DIE (posts, then the thread
 *     ends in its notifier, counts untouched);
 *   - the manager: notes want as a ticket (submitted, and taken as served)
 *     and its kind, and notes it again when a grow ask replaced a noted
 *     watch; later (a watch's 25 ms and growth's 20 us are both just
 *     "later": the model has no time) looks: starts one worker per job
 *     of that ticket still untaken, up to the cap, none if a job was
 *     taken since the ticket, a worker of the shard is idle, its own
 *     spinner holds the role, or (not a watch) the other shard's does; a
 *     watch wakes a sleeper of the shard instead, if it has one and its
 *     own spinner does not hold the role; then clears want and re-reads
 *     the queue (not after a start failed at the cap); reaps a dead
 *     worker (counts corrected) and wakes for every shard with jobs.
 * A futex is modelled exactly: FUTEX_WAIT compares and queues in one step;
 * FUTEX_WAKE(1) hands one token to one queued waiter. The 32-bit wake_seq
 * never comes back to a value within a run, so it is modelled by what the
 * compare needs: the workers that read it (seqd) and those for which it
 * moved since (moved), bit masks by process id.
 *
 * OLD=1 is the protocol before issue 9 (known bug): the wake sees a
 * neighbour's spinner and returns, a spinner that found work does not
 * re-read the shard it covered, a busy worker re-reads only the shard it
 * took from, and growth is a start in the submitter when every worker is
 * busy. check.sh asserts that spin finds the lost job there.
 *
 * HELD=1: shard 0's spinner may, at any moment while it holds the role
 * and no job (its loop's top after a QUICK job, or its spin just begun),
 * be held forever: a SCHED_FIFO thread of the program takes its CPU, so
 * it keeps spinning[0], its idle count and its worker slot and never moves
 * again (held = 1). Shard 1's CPU stays free. WATCH_OLD=1 is the protocol
 * before the watch (a known bug): the wake returns on
 * the other shard's spinner without asking, and every look counts that
 * spinner; with HELD, check.sh asserts that spin finds shard 1's lost job
 * (the held spinner never looks again, nobody else is asked).
 *
 * MARKS=1: a shard marked held (wake.c's hold(): a watch found it did
 * not run) covers nothing until its workers run again. The mark is a
 * hint, so the model does not track it: wherever the code may skip the
 * other shard (its spinner in the wake and in an unwatched look, its
 * sleeper in the help), the model may, nondeterministically, at every
 * such read, which covers every mark the code could have. With MARKS,
 * the wake after help() also asks a watch. MARKS_OLD=1 (known
 * bug, the first version of the marks): at the cap, a submit skipped a
 * marked shard's sleeper too, and nothing else was left to wake: a healthy
 * sleeper that a watch had marked slept through the job (found at once
 * on SC=1).
 *
 * RT=1 (SC=6): thread A makes one call, then becomes real-time (rtnow)
 * and makes two more, each waited for, on shard 0; from then on shard
 * 0's spinner may be held (A keeps CPU 0), and A's jobs are not excused:
 * a real-time caller that counts on its own shard's spinner, idle worker
 * or woken sleeper wakes a sleeper of the other shard, or sets rt_asked
 * and asks WATCH_OWN, whose look starts a worker on the other shard
 * (nothing of the ticket taken), and the manager's re-read after a look
 * acts as for a real-time caller if rt_asked was set (wake.c,
 * help_realtime()). Such a look first moves shard 0's idle workers (held
 * or not, and the spinner role's holder past its call) to CPU 1 (mv0:
 * worker.c's syslet__worker_move()), where they are never held again,
 * and starts one worker fewer, and fewer again for each idle worker of
 * shard 1 not asleep (it looks at shard 0 before it sleeps); a moved
 * worker sleeps allowed on both CPUs and may be held again (mv0 = 0).
 * Not modelled: shard 0's other workers are
 * not held (only its spinner), so a worker started there runs (the code
 * starts them on a covering shard once shard 0 is marked held). RT_OLD=1
 * (known bug, own_spinner): the own spinner counted on, no help;
 * NO_RTASK=1 (known bug): no rt_asked, the ask absorbed by a watch noted
 * before the call, whose look counts only older jobs; MOVE_OLD=1 (known
 * bug, grow_cap; SC=7: at the cap, a call that blocks for good, then a
 * quick one): nothing moved, the held spinner is the only worker left for
 * the quick call.
 *
 * Checked, in every state where no process can move (timeout): no job is
 * queued while the cap allows another worker (SPEC 5: a call never waits
 * behind blocked calls), however many workers block forever, and with RT
 * none of the real-time caller's while a worker does not block; with a held
 * spinner, no job of shard 1 (shard 0's own jobs legitimately wait: their
 * CPU is held, as is every worker pinned there, and the real-time thread
 * is the program's); nor (whatever the cap) while a worker that could
 * take it sleeps un-woken (a sleeper of its shard or of the covering one;
 * with a held spinner, of shard 1); and at every
 * start of a worker: workers <= calls pending + NS (growth bounded by
 * demand; not in OLD mode).
 *
 * Scenarios (SC): 1, issue 9's: thread A on shard 0 submits QUICK, waits
 * for it, submits BLOCK; thread B on shard 1 submits QUICK. 2: both
 * threads submit BLOCK then QUICK. 3: A's QUICK call's notifier ends its
 * worker (DIE), then A submits QUICK; B submits BLOCK then QUICK. 4: A
 * submits QUICK; B submits QUICK, waits for a completion, submits QUICK.
 * 5: each thread submits one QUICK (with HELD: shard 1's call queued
 * while shard 0's spinner is held, with shard 1 workerless, asleep,
 * spinning or idle; the watch's start, its sleeper wake and a grow ask
 * replacing a noted watch all occur). 6 and 7: RT's (above).
 * Parameters: CAP (workers), SPIN (0: spin budget 0), FAIR, RETIRE (idle
 * timeouts), OLD, HELD, WATCH_OLD, RT, RT_OLD, NO_RTASK, MOVE_OLD, SNAP
 * (a wake, and the manager's look, as one step each: fewer states; the
 * racing pairs' other sides keep their steps).
 */
#ifndef CAP
#define CAP 3
#endif
#ifndef SPIN
#define SPIN 1
#endif
#ifndef RETIRE
#define RETIRE 1
#endif
#ifndef OLD
#define OLD 0
#endif
#ifndef SC
#define SC 1
#endif
#ifndef SNAP
#define SNAP 0
#endif
#ifndef HELD
#define HELD 0
#endif
#ifndef WATCH_OLD
#define WATCH_OLD 0
#endif
#ifndef MARKS
#define MARKS 0
#endif
#ifndef FAIR
#define FAIR 1
#endif
#ifndef MARKS_OLD
#define MARKS_OLD 0
#endif
#ifndef RT
#define RT 0
#endif
#ifndef RT_OLD
#define RT_OLD 0
#endif
#ifndef NO_RTASK
#define NO_RTASK 0
#endif
#ifndef MOVE_OLD
#define MOVE_OLD 0
#endif

#define NS 2
#define QUICK 1
#define BLOCK 2
#define DIE 3
#define WATCH 1			/* want kinds: SYSLET__WANT_WATCH, */
#define WATCH_OWN 2		/* _WATCH_OWN, */
#define GROW 3			/* _GROW */
#define other(s) (1 - (s))

chan queue[NS] = [3] of { byte };
short queued[NS];		/* may dip below 0, as the code's */
byte idle[NS], spinning[NS], sleepers[NS];
int seqd[NS], moved[NS];	/* wake_seq: who read it, who saw it move */
byte fw[NS], tok[NS];		/* futex: waiters queued, wake tokens */
byte want[NS];			/* 0, WATCH or GROW */
bool armed[NS];			/* the manager's want_ns != 0 */
byte wkind[NS];			/* the manager's want_kind */
bool held;			/* shard 0's spinner is held forever */
bool rtask[NS];			/* rt_asked: a real-time caller asked */
bool rtnow;			/* RT: thread A runs real-time (holds CPU 0) */
bool mv0;			/* RT: shard 0's idle workers moved to CPU 1 */
byte nblocked;			/* workers blocked for good (BLOCK) */
byte submitted[NS], taken[NS], mark[NS], served[NS];
byte nws[NS];			/* workers homed on a shard */
byte nworkers, dead, posted;

/* wake_seq++: it moved for every worker that read it since */
inline bump(s)
{
	atomic { moved[s] = moved[s] | seqd[s] }
}

inline futex_wake(s)
{
	atomic { if :: fw[s] > tok[s] -> tok[s]++ :: else fi }
}

/* syslet__worker_spawn(): -EAGAIN at the cap */
inline spawn(s)
{
	atomic {
		if
		:: nworkers < CAP ->
			nworkers++; nws[s]++; idle[s]++;
#if !OLD
			assert(nworkers <=
			       submitted[0] + submitted[1] - posted + NS);
#endif
			run worker(s)
		:: else
		fi
	}
}

/*
 * ask(): load want, then CAS it up to k while it is below k (the retries
 * of a failed CAS change nothing shared: one step that sees it below k);
 * a grow ask replaces a watch, never the reverse. The poke is the
 * manager's nondeterministic look at want.
 */
inline ask(s, k)
{
	if
	:: want[s] >= k -> skip
	:: else -> atomic { if :: want[s] < k -> want[s] = k :: else fi }
	fi
}

/* syslet__wake(s)'s last step */
inline grow_ask(s)
{
	if
	:: nworkers >= CAP -> skip	/* (e) */
	:: else -> ask(s, GROW)		/* (d) */
	fi
}

/*
 * help_realtime(s): a sleeper of the covering shard, else a watch of
 * the caller's own shard (WATCH_OWN), rt_asked set first (marks: no).
 */
inline help_rt(s)
{
	if
	:: sleepers[other(s)] > 0 -> bump(other(s)); futex_wake(other(s))
	:: else ->
#if !NO_RTASK
		rtask[s] = 1;
#endif
		ask(s, WATCH_OWN)
	fi
}

/* syslet__wake(s) past the spinners: its own shard, help, growth */
inline own(s, r)
{
	if
	:: sleepers[s] > 0 -> bump(s); futex_wake(s);
		if
		:: r -> help_rt(s)
		:: else
		fi
	:: else ->
	if
	:: idle[s] > 0 ->
		if
		:: r -> help_rt(s)	/* maybe behind the caller */
		:: else
		fi
	:: else ->
	if
	:: sleepers[other(s)] > 0 ->
		bump(other(s)); futex_wake(other(s))
#if MARKS
		; ask(s, WATCH)			/* watched too */
	:: sleepers[other(s)] > 0 ->		/* marked held */
#if MARKS_OLD
		grow_ask(s)
#else
		if
		:: nworkers >= CAP ->		/* all that is left */
			bump(other(s)); futex_wake(other(s))
		:: else -> ask(s, GROW)
		fi
#endif
#endif
	:: else -> grow_ask(s)
	fi fi fi
}

/* syslet__wake(s), for a real-time caller if r */
inline wake(s, r)
{
#if SNAP
atomic {
#endif
#if OLD
	if
	:: spinning[s] -> skip
	:: else ->
	if
	:: spinning[other(s)] -> skip
	:: else ->
	if
	:: sleepers[s] > 0 -> bump(s); futex_wake(s)
	:: else ->
	if
	:: idle[s] > 0 -> skip
	:: else ->
		if
		:: atomic { nworkers < CAP -> spawn(s) }
		:: atomic { nworkers >= CAP -> skip };
			if
			:: sleepers[other(s)] > 0 ->
				bump(other(s)); futex_wake(other(s))
			:: else
			fi
		fi
	fi fi fi fi
#else
	if
	:: spinning[s] ->			/* (b) */
#if !RT_OLD
		if
		:: r && !spinning[other(s)] -> help_rt(s)	/* (d) */
		:: else
		fi
#else
		skip
#endif
	:: else ->
	if
	:: spinning[other(s)] ->		/* (b) */
#if !WATCH_OLD
		ask(s, WATCH)			/* watched (d) */
#else
		skip
#endif
#if MARKS
	:: spinning[other(s)] -> own(s, r)	/* the other shard marked held */
#endif
	:: else -> own(s, r)
	fi fi
#endif
#if SNAP
}
#endif
}

inline recheck(s, r)
{
	if
	:: queued[s] > 0 -> wake(s, r)
	:: else
	fi
}

inline submit(s, kind, r)
{
	if
	:: nworkers == 0 -> spawn(s)
	:: else
	fi;
	atomic { submitted[s]++; queue[s] ! kind };
	queued[s]++;
	wake(s, r)
}

/* take(): nonblocking dequeue */
inline take(s, ok)
{
	atomic {
		if
		:: nempty(queue[s]) -> queue[s] ? kind; ok = 1
		:: empty(queue[s]) -> ok = 0
		fi
	}
	if
	:: ok -> atomic { queued[s]--; taken[s]++ }
	:: else
	fi
}

/* work(): the shard's queue, or the one it covers */
inline work(h, r)
{
	atomic { if :: queued[h] > 0 -> r = 1 :: else -> r = 0 fi };
	if
	:: !r -> atomic { r = (queued[other(h)] > 0) }
	:: else
	fi
}

proctype worker(byte h)
{
	byte kind, from;
	bool ok, found, spinner, waiting;
	int me = 1 << _pid;

loop:
	/* dead locals cleared: states that differ only there are one */
	atomic { from = h; kind = 0; ok = 0; found = 0; waiting = 0;
#if HELD
		/* the spinner role carried from its last job (QUICK) */
		if
		:: h == 0 && spinner && (!RT || rtnow) && !mv0 -> goto hold
		:: skip
		fi
#endif
	};
#if FAIR
	/* worker.c's fairness: a waiting shard's job before its own */
	if
	:: queued[other(h)] > 0 && queued[h] > 0 ->
		from = other(h);
		take(from, ok);
		if
		:: ok -> goto busy
		:: else -> from = h
		fi
	:: skip
	fi;
#endif
	take(h, ok);
	if
	:: ok -> goto busy
	:: else
	fi;
	if
	:: queued[other(h)] > 0 ->
		from = other(h);
		take(from, ok);
		if
		:: ok -> goto busy
		:: else
		fi
	:: else
	fi;

	/* spin() */
	if
	:: !spinner && SPIN ->
		atomic { if :: !spinning[h] -> spinning[h] = 1; spinner = 1
			    :: else fi }
	:: else
	fi;
	if
	:: spinner ->
#if HELD
		/* carried or just claimed, and no job found */
		if
		:: h == 0 && (!RT || rtnow) && !mv0 -> goto hold
		:: spinner = 0
		fi;
#else
		spinner = 0;
#endif
		if
		:: (queued[h] > 0 || queued[other(h)] > 0) ->
			found = 1	/* the look that ends the spin */
		:: found = 0		/* the budget ran out */
		fi;
		spinning[h] = 0;
		if
		:: !found -> work(h, found)
		:: else
		fi;
		if
		:: found -> goto loop
		:: else
		fi
	:: else
	fi;

	/* nap() */
#if RT && !MOVE_OLD
	/* go_home(): a moved worker of shard 0 may be held again */
	if
	:: h == 0 && mv0 -> mv0 = 0
	:: else
	fi;
#endif
	sleepers[h]++;
	atomic { seqd[h] = seqd[h] | me; moved[h] = moved[h] & ~me };
	work(h, found);
	if
	:: found -> sleepers[h]--; goto loop
	:: else
	fi;
	atomic {
		if
		:: !(moved[h] & me) -> fw[h]++; waiting = 1
		:: else -> waiting = 0
		fi;
		seqd[h] = seqd[h] & ~me; moved[h] = moved[h] & ~me
	}
	if
	:: waiting ->
end_sleep:
		if
		:: atomic { tok[h] > 0 -> tok[h]--; fw[h]-- }
#if RETIRE
		:: atomic { fw[h] > tok[h] -> fw[h]-- };
			sleepers[h]--;
			goto retire
#endif
		fi
	:: else
	fi;
	sleepers[h]--;
	goto loop;

retire:
	/* retire(): floor 0, the pool's last worker stays */
	atomic {
		if
		:: nworkers <= 1 -> goto loop
		:: else -> nworkers--; nws[h]--
		fi
	}
	idle[h]--;
	work(h, found);
	if
	:: found -> idle[h]++; atomic { nworkers++; nws[h]++ }; goto loop
	:: else -> goto gone
	fi;

busy:
	/* syslet__wake_busy() */
	idle[h]--;
#if OLD
	if
	:: spinner -> spinner = 0; spinning[h] = 0;
		if
		:: queued[other(h)] > 0 -> wake(other(h), 0)
		:: else
		fi
	:: else
	fi;
	recheck(from, 0);
#else
	if
	:: spinner -> spinner = 0; spinning[h] = 0
	:: else
	fi;
	recheck(h, 0);
	recheck(other(h), 0);
#endif
	if
	:: kind == BLOCK ->
		d_step { from = 0; ok = 0; found = 0; waiting = 0;
#if RT
			 nblocked++
#endif
		};
end_blocked:
		false
	:: kind == DIE ->
		posted++;
		dead++;		/* the thread ends in its notifier */
		goto gone
	:: kind == QUICK ->
		if
		:: SPIN ->
			atomic { if :: !spinning[h] -> spinning[h] = 1; spinner = 1
				    :: else fi }
		:: else
		fi;
		posted++;
		idle[h]++;
		goto loop
	fi;
#if HELD
hold:
	/*
	 * A real-time thread of the program takes the spinner's CPU for good:
	 * it never moves again and keeps the role (spinning[0] = 1), its
	 * idle count and its worker slot.
	 */
	atomic { held = 1; from = 0; ok = 0; found = 0; waiting = 0 };
end_held:
#if RT && !MOVE_OLD
	/*
	 * The manager's look moved it to CPU 1 (worker.c's
	 * syslet__worker_move()): it runs again, shard 0's still, with the
	 * role it held, and is never held again.
	 */
	mv0;
	goto loop;
#endif
	false;
#endif
gone:
	skip
}

/* want_step: one or all of the ticket's untaken jobs */
inline ramp(n)
{
	if
	:: n > 0 -> skip
	:: n > 1 -> n = 1
	:: else -> n = 0
	fi
}

/*
 * The manager: requests (not in OLD mode) and deaths. A request is noted
 * (armed: ticket, served and its kind) when want is set and none is noted,
 * or when want is stronger than the kind noted (a watch that became a
 * growth ask: noted again). Its look comes later, at any moment (the
 * model has no time: a watch's SYSLET__WATCH_NS and a growth ask's
 * SYSLET__GROW_NS are both "later"), and only while want is not stronger
 * than the kind noted (the code notes it again first).
 */
active proctype manager()
{
	byte s, n, i, to;
	bool watched, woke, r;

end_idle:
	do
#if !OLD
	:: atomic { want[0] && (!armed[0] || wkind[0] < want[0]) ->
		    armed[0] = 1; wkind[0] = want[0];
		    mark[0] = submitted[0]; served[0] = taken[0] }
	:: atomic { want[1] && (!armed[1] || wkind[1] < want[1]) ->
		    armed[1] = 1; wkind[1] = want[1];
		    mark[1] = submitted[1]; served[1] = taken[1] }
	:: atomic { armed[0] && wkind[0] >= want[0] -> s = 0 } -> goto grow
	:: atomic { armed[1] && wkind[1] >= want[1] -> s = 1 } -> goto grow
#endif
	:: atomic { dead > 0 -> dead--; nworkers-- } ->
		/* leave_busy(): the worker's home is irrelevant here */
		recheck(0, 0);
		recheck(1, 0);
		s = 0
	od;
grow:
	/*
	 * syslet__wake_grow(): jobs of the ticket untaken; none while jobs
	 * still move (taken since the ticket) or a worker is idle, or a
	 * spinner covers the shard: its own, or (not watched) the other's.
	 * Watched: a sleeper of the shard is woken (unless its own spinner
	 * holds the role), and then none either. SNAP: the whole look is one
	 * step, as the wake is.
	 */
#if SNAP
atomic {
#endif
	atomic {
		armed[s] = 0;
		watched = (wkind[s] == WATCH || wkind[s] == WATCH_OWN);
		n = mark[s] - taken[s];
		to = s;
		if
		:: wkind[s] == WATCH_OWN && n > 0 && taken[s] == served[s] ->
			to = other(s); ramp(n);	/* s held: a worker of the other */
#if RT && !MOVE_OLD
			/*
			 * Its idle workers first (one or all of them: n less
			 * one), held or not yet, and the spinner role's holder
			 * past its call (worker.c's idle hint is set before
			 * the post): moved there, they take the jobs and are
			 * never held again.
			 */
			if
			:: s == 0 && (idle[0] > 0 || spinning[0]) && !mv0 &&
			   n > 0 ->
				mv0 = 1; n--
			:: else
			fi;
			/* the other's idle workers not asleep take them too */
			if
			:: idle[to] >= sleepers[to] + n -> n = 0
			:: idle[to] > sleepers[to] &&
			   idle[to] < sleepers[to] + n ->
				n = n - (idle[to] - sleepers[to])
			:: else
			fi
#endif
		:: !(wkind[s] == WATCH_OWN && n > 0 &&
		     taken[s] == served[s]) &&
		   (taken[s] != served[s] || idle[s] > 0 || spinning[s] ||
		   (!watched && spinning[other(s)])) -> n = 0
		:: !(wkind[s] == WATCH_OWN && n > 0 &&
		     taken[s] == served[s]) &&
		   !(taken[s] != served[s] || idle[s] > 0 || spinning[s] ||
		   (!watched && spinning[other(s)])) -> ramp(n)
#if MARKS
		:: !(taken[s] != served[s] || idle[s] > 0 || spinning[s]) &&
		   !watched && spinning[other(s)] -> ramp(n)	/* marked held */
#endif
		fi;
		wkind[s] = 0;
		woke = (watched && to == s && !spinning[s] && sleepers[s] > 0);
		if
		:: woke -> n = 0
		:: else
		fi
	};
	if
	:: woke -> bump(s); futex_wake(s)
	:: else
	fi;
	i = 0;
	do
	:: i < n && nworkers < CAP -> spawn(to); i++
	:: else -> break
	od;
	want[s] = 0;
	if
	:: i < n -> skip	/* a start failed at the cap, (e) */
	:: else ->
		atomic { r = rtask[s]; rtask[s] = 0 };
		recheck(s, r)
	fi;
#if SNAP
}
#endif
	/* dead after the look (note sets them again) */
	d_step { mark[s] = 0; served[s] = 0; s = 0; n = 0; i = 0;
		 watched = 0; woke = 0; to = 0; r = 0 };
	goto end_idle
}

/*
 * A thread waits for a completion (posted > 0); with HELD that may be the
 * held spinner's own shard's, which waits with it: a valid end there.
 */
active proctype thread_a()
{
#if SC == 1
	submit(0, QUICK, 0);
#if HELD
end_wait:
#endif
	posted > 0;
	submit(0, BLOCK, 0)
#elif SC == 2
	submit(0, BLOCK, 0);
	submit(0, QUICK, 0)
#elif SC == 3
	submit(0, DIE, 0);
	posted > 0;
	submit(0, QUICK, 0)
#elif SC == 4
	submit(0, QUICK, 0)
#elif SC == 6
	/*
	 * RT: one call as SCHED_OTHER, then real-time: each call reaped by
	 * a futex wait, the next polled for (the held spinner's CPU is its).
	 */
	submit(0, QUICK, 0);
	posted > 0;
	rtnow = 1;
	submit(0, QUICK, RT);
	posted > 1;
	submit(0, QUICK, RT)
#elif SC == 7
	/*
	 * RT at the cap (realtime_callers grow_cap): one call as SCHED_OTHER, then
	 * real-time, a call that blocks for good and a quick one; with CAP=2
	 * the only worker left for the quick one is the held spinner.
	 */
	submit(0, QUICK, 0);
	posted > 0;
	rtnow = 1;
	submit(0, BLOCK, RT);
	submit(0, QUICK, RT)
#else
	submit(0, QUICK, 0)
#endif
}

active proctype thread_b()
{
#if SC == 1
	submit(1, QUICK, 0)
#elif SC == 4
	submit(1, QUICK, 0);
#if HELD
end_wait:
#endif
	posted > 0;
	submit(1, QUICK, 0)
#elif SC == 5
	submit(1, QUICK, 0)
#elif SC == 6 || SC == 7
	skip
#else
	submit(1, BLOCK, 0);
	submit(1, QUICK, 0)
#endif
}

/*
 * Nothing can move: no job may be queued while the cap allows a worker,
 * nor while a worker that could take it sleeps un-woken (whatever the
 * cap); shard 0's jobs, and shard 0's sleepers, are excused once its
 * spinner is held (their CPU is).
 */
active proctype monitor()
{
	timeout ->
	assert(nworkers >= CAP ||
	       (queued[1] == 0 && ((held && !RT) || queued[0] == 0)));
	assert(queued[1] == 0 ||
	       (sleepers[1] == 0 && (held || sleepers[0] == 0)));
	assert(queued[0] == 0 || held ||
	       (sleepers[0] == 0 && sleepers[1] == 0));
	/*
	 * RT: the real-time caller's jobs wait, even at the cap, only while
	 * every worker blocks in a call (not one held by that caller).
	 */
	assert(!RT || queued[0] == 0 || nblocked >= nworkers)
}
