# fish completion for sshfsm; generated from internal/config.
function __sshfsm_options
    set -l head (string replace -r '[^,]*$' '' -- (commandline -ct))
    for o in ssh_command= sftp_server= directport= max_conns= timeout= reconnect noreconnect password_stdin create=epff create=ff create=mfs create=lfs create=rand require_all port= allow_other allow_root default_permissions nodefault_permissions ro rw noexec exec nosuid suid nodev dev sync async dirsync uid= gid= umask= fsname= subtype= kernel_cache direct_io xattr max_write= log= metrics= debug sshfs_debug noatime atime nodiratime diratime relatime norelatime strictatime nostrictatime lazytime nolazytime attr_timeout= entry_timeout= negative_timeout= dcache_timeout= prefetch_depth= cache_timeout= watch=auto watch=yes watch=writes watch=no cache=auto cache=immutable cache=strict cache=yes cache=no disk_cache nodisk_cache cache_dir= cache_max_size= follow_symlinks transform_symlinks contain_symlinks nocontain_symlinks no_contain_symlinks idmap=none idmap=user idmap=file uidfile= gidfile= nomap=ignore nomap=error dir_cache=yes dir_cache=no dcache_stat_timeout= dcache_dir_timeout= dcache_link_timeout= dcache_max_size= dcache_clean_interval= dcache_min_clean_interval= workaround= ssh_protocol=2 sshfs_sync no_readahead sync_readdir delay_connect no_check_root auto_cache noauto_cache auto_unmount disable_hardlink noforget no_rofd_flush remember= slave passive sshfs_verbose max_read= ac_attr_timeout= modules= subdir= from_code= to_code= Cipher= nonempty big_writes large_read hard_remove use_ino readdir_ino defaults auto noauto user users nouser owner group _netdev nofail comment= config=
        echo $head$o
    end
end
complete -c sshfsm -s o -x -a '(__sshfsm_options)' -d 'mount option'
complete -c sshfsm -l config -r -F -d 'Read the branches, host settings, options and mountpoint from a config file'
complete -c sshfsm -s p -x -d 'Port of the ssh server'
complete -c sshfsm -s F -r -F -d 'Use FILE as the ssh configuration file instead of ~/'
complete -c sshfsm -s C -d 'Compress the ssh stream'
complete -c sshfsm -s f -d 'Stay in the foreground'
complete -c sshfsm -s d -l debug -d 'Log every request to stderr'
complete -c sshfsm -s v -l verbose -d 'Log connections, reconnections and hosts going down and up besides warnings'
complete -c sshfsm -s s -d 'Ignored'
complete -c sshfsm -s h -l help -d 'Print this help and exit'
complete -c sshfsm -s V -l version -d 'Print the version and exit'
complete -c sshfsm -l man -d 'Print the manual page'
complete -c sshfsm -n '__fish_use_subcommand' -a 'help version status warm help version'
