await (await import('./members.ts')).importShare(6, 8)
