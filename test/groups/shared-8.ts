await (await import('./members.ts')).importShare(7, 8)
